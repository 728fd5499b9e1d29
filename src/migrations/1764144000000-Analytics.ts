import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Analytics: append-only facts written with the activity, the daily rollups read by the endpoints,
 * and the rollup's bookkeeping (the days to roll up again and how far facts have been looked at).
 */
export class Analytics1764144000000 implements MigrationInterface {
  name = 'Analytics1764144000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "analytics_facts" (
        "id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
        "organization_id" uuid NOT NULL,
        "day" date NOT NULL,
        "user_id" uuid NOT NULL,
        "session_id" uuid,
        "kind" character varying(24) NOT NULL,
        "client" character varying(24),
        "level" character varying(16),
        "name" text,
        "detail" text,
        "command" text,
        "txid" bigint NOT NULL,
        CONSTRAINT "analytics_facts_pkey" PRIMARY KEY ("id")
      )`);
    await q.query(`CREATE INDEX "analytics_facts_organization_day_idx" ON "analytics_facts" ("organization_id", "day")`);
    await q.query(`CREATE INDEX "analytics_facts_txid_idx" ON "analytics_facts" ("txid")`);
    await q.query(`
      CREATE TABLE "analytics_user_days" (
        "organization_id" uuid NOT NULL,
        "day" date NOT NULL,
        "user_id" uuid NOT NULL,
        "metrics" jsonb NOT NULL,
        "active" boolean NOT NULL,
        "clients" jsonb NOT NULL,
        CONSTRAINT "analytics_user_days_pkey" PRIMARY KEY ("organization_id", "day", "user_id")
      )`);
    await q.query(`CREATE INDEX "analytics_user_days_organization_user_idx" ON "analytics_user_days" ("organization_id", "user_id", "day")`);
    await q.query(`
      CREATE TABLE "analytics_days" (
        "organization_id" uuid NOT NULL,
        "day" date NOT NULL,
        "tools" jsonb NOT NULL,
        "activity" jsonb NOT NULL,
        "productivity" jsonb NOT NULL,
        "rolled_up_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        CONSTRAINT "analytics_days_pkey" PRIMARY KEY ("organization_id", "day")
      )`);
    await q.query(`
      CREATE TABLE "analytics_dirty_days" (
        "organization_id" uuid NOT NULL,
        "day" date NOT NULL,
        CONSTRAINT "analytics_dirty_days_pkey" PRIMARY KEY ("organization_id", "day")
      )`);
    await q.query(`
      CREATE TABLE "analytics_rollup_state" (
        "id" smallint NOT NULL,
        "watermark" bigint NOT NULL,
        CONSTRAINT "analytics_rollup_state_pkey" PRIMARY KEY ("id")
      )`);
    await q.query(`INSERT INTO "analytics_rollup_state" ("id", "watermark") VALUES (1, 0)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "analytics_rollup_state"`);
    await q.query(`DROP TABLE "analytics_dirty_days"`);
    await q.query(`DROP TABLE "analytics_days"`);
    await q.query(`DROP TABLE "analytics_user_days"`);
    await q.query(`DROP TABLE "analytics_facts"`);
  }
}
