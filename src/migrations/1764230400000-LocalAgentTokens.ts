import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The agent token of managed `local` computers, kept encrypted (a SecretBox envelope) so the
 * server can start their agents. Null for BYOM computers, and for local ones until their token is
 * next rotated when they were created before this migration.
 */
export class LocalAgentTokens1764230400000 implements MigrationInterface {
  name = 'LocalAgentTokens1764230400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "computers" ADD "agent_token_encrypted" text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "computers" DROP COLUMN "agent_token_encrypted"`);
  }
}
