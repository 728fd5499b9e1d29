import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When an agent last asked for work, per organization and queue (a computer's, or the unrouted
 * one, for any owner or one member): how the server tells a user that no agent will take a session.
 */
export class AgentPresence1764490000000 implements MigrationInterface {
  name = 'AgentPresence1764490000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "agent_presence" (
        "organization_id" uuid NOT NULL,
        "queue" varchar(80) NOT NULL,
        "computer_id" uuid,
        "owner_id" uuid,
        "seen_at" timestamptz(3) NOT NULL,
        CONSTRAINT "agent_presence_pkey" PRIMARY KEY ("organization_id", "queue")
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "agent_presence"`);
  }
}
