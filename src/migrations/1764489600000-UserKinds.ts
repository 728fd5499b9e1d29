import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Users are people (`human`) or service accounts (`service_account`): only a service account may own
 * a computer created with `serviceAccountId`. Every existing user is a person.
 */
export class UserKinds1764489600000 implements MigrationInterface {
  name = 'UserKinds1764489600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "users" ADD "kind" character varying(16) NOT NULL DEFAULT 'human'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "users" DROP COLUMN "kind"`);
  }
}
