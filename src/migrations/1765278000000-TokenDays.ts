import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The tokens endpoint's day rows are rolled up with the rest of the day, kept as the JSON text it serves: a 90-day
 * answer (2.8 MB with a hundred users a day) is then joined from stored rows instead of read from thousands of usage
 * rows, built and serialized on every request. Days rolled up before this get their row at the next rollup.
 */
export class TokenDays1765278000000 implements MigrationInterface {
  name = 'TokenDays1765278000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "analytics_days" ADD COLUMN "tokens" text`);
    await q.query(`INSERT INTO "analytics_dirty_days" ("organization_id", "day") SELECT "organization_id", "day" FROM "analytics_days" ON CONFLICT DO NOTHING`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "analytics_days" DROP COLUMN "tokens"`);
  }
}
