import { MigrationInterface, QueryRunner } from 'typeorm';

/** Rate limit budgets shared by every instance on one database, per client and fixed window. */
export class RateLimits1764316800000 implements MigrationInterface {
  name = 'RateLimits1764316800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "rate_limit_windows" (
        "key" varchar(200) NOT NULL,
        "window_start" timestamptz(3) NOT NULL,
        "used" integer NOT NULL,
        CONSTRAINT "rate_limit_windows_pkey" PRIMARY KEY ("key", "window_start")
      )`);
    await q.query(`CREATE INDEX "rate_limit_windows_window_start_idx" ON "rate_limit_windows" ("window_start")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "rate_limit_windows"`);
  }
}
