import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks and their deliveries. A durable listener of the event log queues one delivery per
 * matching webhook and event (unique: a listener run again queues nothing twice); each instance's
 * delivery job claims due rows (`FOR UPDATE SKIP LOCKED`, `next_attempt_at` doubling as a lease while
 * an attempt runs) and records every attempt in `attempts`.
 */
export class Webhooks1764750000000 implements MigrationInterface {
  name = 'Webhooks1764750000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "webhooks" (
        "id" uuid NOT NULL,
        "organization_id" uuid NOT NULL,
        "url" text NOT NULL,
        "description" text,
        "event_types" jsonb NOT NULL,
        "enabled" boolean NOT NULL,
        "secret" text NOT NULL,
        "secret_hint" varchar(16) NOT NULL,
        "starts_after_seq" bigint NOT NULL,
        "failing_since" timestamptz(3),
        "disabled_reason" varchar(32),
        "created_by" uuid,
        "created_at" timestamptz(3) NOT NULL,
        "updated_at" timestamptz(3) NOT NULL,
        CONSTRAINT "webhooks_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "webhooks_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX "webhooks_organization" ON "webhooks" ("organization_id", "created_at", "id")`);
    await q.query(`
      CREATE TABLE "webhook_deliveries" (
        "id" uuid NOT NULL,
        "webhook_id" uuid NOT NULL,
        "organization_id" uuid NOT NULL,
        "event_id" uuid NOT NULL,
        "event_seq" bigint NOT NULL,
        "event_type" varchar(64) NOT NULL,
        "payload" text NOT NULL,
        "status" varchar(16) NOT NULL,
        "retries" integer NOT NULL DEFAULT 0,
        "next_attempt_at" timestamptz(3),
        "attempts" jsonb NOT NULL DEFAULT '[]',
        "created_at" timestamptz(3) NOT NULL,
        "delivered_at" timestamptz(3),
        CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "webhook_deliveries_event" UNIQUE ("webhook_id", "event_id"),
        CONSTRAINT "webhook_deliveries_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX "webhook_deliveries_due" ON "webhook_deliveries" ("next_attempt_at") WHERE "status" = 'pending'`);
    await q.query(`CREATE INDEX "webhook_deliveries_list" ON "webhook_deliveries" ("webhook_id", "created_at", "id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "webhook_deliveries"`);
    await q.query(`DROP TABLE "webhooks"`);
  }
}
