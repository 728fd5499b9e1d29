import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event log (a transactional outbox): every command writes the events it raises in its own
 * transaction, numbered per organization with no gap in commit order (`event_sequences` holds
 * each organization's last number; its row lock orders the commits). Listeners that must not
 * miss an event keep their place per organization in `event_checkpoints`.
 */
export class EventLog1764662400000 implements MigrationInterface {
  name = 'EventLog1764662400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "event_sequences" (
        "organization_id" uuid NOT NULL,
        "last_seq" bigint NOT NULL,
        CONSTRAINT "event_sequences_pkey" PRIMARY KEY ("organization_id")
      )`);
    await q.query(`
      CREATE TABLE "events" (
        "organization_id" uuid NOT NULL,
        "seq" bigint NOT NULL,
        "id" uuid NOT NULL,
        "type" varchar(64) NOT NULL,
        "occurred_at" timestamptz(3) NOT NULL,
        "session_id" uuid,
        "actor" jsonb,
        "data" jsonb NOT NULL,
        CONSTRAINT "events_pkey" PRIMARY KEY ("organization_id", "seq")
      )`);
    await q.query(`CREATE INDEX "events_session" ON "events" ("organization_id", "session_id", "seq") WHERE "session_id" IS NOT NULL`);
    await q.query(`CREATE INDEX "events_occurred" ON "events" ("occurred_at")`);
    await q.query(`
      CREATE TABLE "event_checkpoints" (
        "listener" varchar(64) NOT NULL,
        "organization_id" uuid NOT NULL,
        "seq" bigint NOT NULL,
        "failures" integer NOT NULL DEFAULT 0,
        "retry_at" timestamptz(3),
        CONSTRAINT "event_checkpoints_pkey" PRIMARY KEY ("listener", "organization_id")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "event_checkpoints"`);
    await q.query(`DROP TABLE "events"`);
    await q.query(`DROP TABLE "event_sequences"`);
  }
}
