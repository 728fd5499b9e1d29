import { MigrationInterface, QueryRunner } from 'typeorm';

/** Organizations, their users with one role each, and hashed API keys. */
export class Foundation1763712000000 implements MigrationInterface {
  name = 'Foundation1763712000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "organizations" (
        "id" uuid NOT NULL,
        "slug" character varying(63) NOT NULL,
        "name" character varying(200) NOT NULL,
        "features" jsonb NOT NULL DEFAULT '{}',
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "organizations_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "organizations_slug_key" UNIQUE ("slug")
      )`);
    await q.query(`
      CREATE TABLE "users" (
        "id" uuid NOT NULL,
        "organization_id" uuid NOT NULL,
        "email" character varying(320) NOT NULL,
        "name" character varying(200) NOT NULL,
        "role" character varying(16) NOT NULL,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "users_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "users_organization_id_fkey" FOREIGN KEY ("organization_id")
          REFERENCES "organizations"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE UNIQUE INDEX "users_organization_email_key" ON "users" ("organization_id", "email")`);
    await q.query(`
      CREATE TABLE "api_keys" (
        "id" uuid NOT NULL,
        "organization_id" uuid NOT NULL,
        "user_id" uuid NOT NULL,
        "name" character varying(100) NOT NULL,
        "prefix" character varying(16) NOT NULL,
        "key_hash" character varying(64) NOT NULL,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
        "last_used_at" TIMESTAMP(3) WITH TIME ZONE,
        "expires_at" TIMESTAMP(3) WITH TIME ZONE,
        "revoked_at" TIMESTAMP(3) WITH TIME ZONE,
        CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "api_keys_user_id_fkey" FOREIGN KEY ("user_id")
          REFERENCES "users"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys" ("key_hash")`);
    await q.query(`CREATE INDEX "api_keys_user_created_idx" ON "api_keys" ("user_id", "created_at", "id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "api_keys"`);
    await q.query(`DROP TABLE "users"`);
    await q.query(`DROP TABLE "organizations"`);
  }
}
