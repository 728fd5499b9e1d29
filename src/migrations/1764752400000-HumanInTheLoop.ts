import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A person in the loop of a turn: the running turn can be interrupted (who and when, on the session
 * row), and an agent can ask a person to approve a tool call before running it (`tool_approvals`,
 * with a count of the session's pending ones on the session row for its view).
 */
export class HumanInTheLoop1764752400000 implements MigrationInterface {
  name = 'HumanInTheLoop1764752400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE "sessions"
        ADD COLUMN "turn_interrupted_at" timestamptz(3),
        ADD COLUMN "turn_interrupted_by" jsonb,
        ADD COLUMN "pending_tool_approvals" integer NOT NULL DEFAULT 0`);
    await q.query(`
      CREATE TABLE "tool_approvals" (
        "id" uuid NOT NULL,
        "organization_id" uuid NOT NULL,
        "session_id" uuid NOT NULL,
        "turn_id" uuid NOT NULL,
        "tool_name" varchar(128) NOT NULL,
        "tool_call_id" varchar(256),
        "summary" varchar(2000) NOT NULL,
        "input" jsonb NOT NULL,
        "status" varchar(16) NOT NULL,
        "message" varchar(4000),
        "requested_at" timestamptz(3) NOT NULL,
        "expires_at" timestamptz(3) NOT NULL,
        "resolved_at" timestamptz(3),
        "resolved_by" jsonb,
        CONSTRAINT "tool_approvals_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "tool_approvals_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX "tool_approvals_session_idx" ON "tool_approvals" ("session_id", "requested_at")`);
    await q.query(`CREATE INDEX "tool_approvals_pending_expiry_idx" ON "tool_approvals" ("expires_at") WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "tool_approvals"`);
    await q.query(`ALTER TABLE "sessions" DROP COLUMN "turn_interrupted_at", DROP COLUMN "turn_interrupted_by", DROP COLUMN "pending_tool_approvals"`);
  }
}
