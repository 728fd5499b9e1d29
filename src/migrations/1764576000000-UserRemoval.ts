import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A removed user keeps their row, so what they made (sessions, computers, revisions they authored) stays,
 * but no credential of theirs works again. Adding the same address later brings the user back.
 */
export class UserRemoval1764576000000 implements MigrationInterface {
  name = 'UserRemoval1764576000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "users" ADD "removed_at" TIMESTAMP(3) WITH TIME ZONE`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "users" DROP COLUMN "removed_at"`);
  }
}
