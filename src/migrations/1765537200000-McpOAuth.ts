import { MigrationInterface, QueryRunner } from 'typeorm';

/** OAuth sign-ins to the organization's HTTP MCP servers (McpOAuthConnectionEntity). */
export class McpOAuth1765537200000 implements MigrationInterface {
  name = 'McpOAuth1765537200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "mcp_oauth_connections" (
      "organization_id" uuid NOT NULL,
      "server_name" varchar(64) NOT NULL,
      "server_url" text NOT NULL,
      "status" varchar(16) NOT NULL,
      "state_hash" varchar(64),
      "pending_until" timestamptz(3),
      "secrets" text NOT NULL,
      "discovery" json,
      "scope" text,
      "expires_at" timestamptz(3),
      "connected_at" timestamptz(3),
      "connected_by" uuid NOT NULL,
      "problem" text,
      "updated_at" timestamptz(3) NOT NULL,
      CONSTRAINT "mcp_oauth_connections_pkey" PRIMARY KEY ("organization_id", "server_name"),
      CONSTRAINT "mcp_oauth_connections_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE
    )`);
    await q.query(`CREATE UNIQUE INDEX "mcp_oauth_connections_state_hash_key" ON "mcp_oauth_connections" ("state_hash")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "mcp_oauth_connections"`);
  }
}
