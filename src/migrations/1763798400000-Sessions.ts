import { MigrationInterface, QueryRunner } from 'typeorm';

/** Sessions with their work-queue state, messages in conversation order, daily token usage, and idempotency keys. */
export class Sessions1763798400000 implements MigrationInterface {
  name = 'Sessions1763798400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "sessions" (
        "id" uuid NOT NULL,
        "organization_id" uuid NOT NULL,
        "owner_id" uuid NOT NULL,
        "computer_id" uuid,
        "title" character varying(500),
        "status" character varying(16) NOT NULL DEFAULT 'idle',
        "message_count" integer NOT NULL DEFAULT '0',
        "last_message_id" uuid,
        "last_user_seq" integer NOT NULL DEFAULT '0',
        "claimed_seq" integer NOT NULL DEFAULT '0',
        "work_computer_id" uuid,
        "pending_since" TIMESTAMP(3) WITH TIME ZONE,
        "turn_base_seq" integer NOT NULL DEFAULT '0',
        "turn_id" uuid,
        "lease_expires_at" TIMESTAMP(3) WITH TIME ZONE,
        "settings" jsonb NOT NULL DEFAULT '{}',
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "completed_at" TIMESTAMP(3) WITH TIME ZONE,
        CONSTRAINT "sessions_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "sessions_organization_id_fkey" FOREIGN KEY ("organization_id")
          REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION,
        CONSTRAINT "sessions_owner_id_fkey" FOREIGN KEY ("owner_id")
          REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`);
    await q.query(`CREATE INDEX "sessions_organization_created_idx" ON "sessions" ("organization_id", "created_at", "id")`);
    await q.query(`CREATE INDEX "sessions_owner_created_idx" ON "sessions" ("owner_id", "created_at", "id")`);
    await q.query(`CREATE INDEX "sessions_computer_created_idx" ON "sessions" ("computer_id", "created_at", "id") WHERE computer_id IS NOT NULL`);
    await q.query(`CREATE INDEX "sessions_waiting_work_idx" ON "sessions" ("organization_id", "work_computer_id", "pending_since") WHERE status = 'pending'`);
    await q.query(`CREATE INDEX "sessions_turn_lease_idx" ON "sessions" ("lease_expires_at") WHERE status = 'running'`);

    await q.query(`
      CREATE TABLE "messages" (
        "id" uuid NOT NULL,
        "session_id" uuid NOT NULL,
        "seq" integer NOT NULL,
        "role" character varying(16) NOT NULL,
        "parent_id" uuid,
        "user_message_source" character varying(40),
        "author_id" uuid,
        "content" jsonb NOT NULL,
        "attributes" jsonb NOT NULL DEFAULT '{}',
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        CONSTRAINT "messages_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "messages_session_id_fkey" FOREIGN KEY ("session_id")
          REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`);
    await q.query(`CREATE UNIQUE INDEX "messages_session_seq_key" ON "messages" ("session_id", "seq")`);
    await q.query(`CREATE INDEX "messages_session_role_seq_idx" ON "messages" ("session_id", "role", "seq")`);

    await q.query(`
      CREATE TABLE "token_usage_daily" (
        "organization_id" uuid NOT NULL,
        "day" date NOT NULL,
        "user_id" uuid NOT NULL,
        "model" character varying(200) NOT NULL,
        "input_tokens" bigint NOT NULL DEFAULT '0',
        "output_tokens" bigint NOT NULL DEFAULT '0',
        "cache_creation_tokens" bigint NOT NULL DEFAULT '0',
        "cache_read_tokens" bigint NOT NULL DEFAULT '0',
        "thinking_tokens" bigint NOT NULL DEFAULT '0',
        CONSTRAINT "token_usage_daily_pkey" PRIMARY KEY ("organization_id", "day", "user_id", "model")
      )`);

    await q.query(`
      CREATE TABLE "idempotency_keys" (
        "organization_id" uuid NOT NULL,
        "user_id" uuid NOT NULL,
        "key" character varying(255) NOT NULL,
        "request_hash" character varying(64) NOT NULL,
        "status_code" integer NOT NULL,
        "response" jsonb NOT NULL,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("organization_id", "user_id", "key")
      )`);
    await q.query(`CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" ("created_at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "idempotency_keys"`);
    await q.query(`DROP TABLE "token_usage_daily"`);
    await q.query(`DROP TABLE "messages"`);
    await q.query(`DROP TABLE "sessions"`);
  }
}
