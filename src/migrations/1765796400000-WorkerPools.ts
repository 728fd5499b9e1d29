import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Worker pools: groups of machines an organization runs managed computers on, away from the server's host, and the
 * enrollment tokens a worker registers into its pool with (kept as SHA-256 hashes; the token is shown once).
 */
export class WorkerPools1765796400000 implements MigrationInterface {
  name = 'WorkerPools1765796400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "worker_pools" (
        "organization_id" uuid NOT NULL,
        "id" uuid NOT NULL,
        "name" character varying(63) NOT NULL,
        "description" character varying(500),
        "max_computers_per_worker" integer,
        "allow_unsandboxed" boolean NOT NULL DEFAULT false,
        "created_by" uuid,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        CONSTRAINT "worker_pools_pkey" PRIMARY KEY ("organization_id", "id"),
        CONSTRAINT "worker_pools_organization_id_fkey" FOREIGN KEY ("organization_id")
          REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`);
    await q.query(`CREATE UNIQUE INDEX "worker_pools_name_key" ON "worker_pools" ("organization_id", "name")`);
    await q.query(`CREATE INDEX "worker_pools_organization_created_idx" ON "worker_pools" ("organization_id", "created_at", "id")`);

    await q.query(`
      CREATE TABLE "worker_enrollment_tokens" (
        "organization_id" uuid NOT NULL,
        "id" uuid NOT NULL,
        "pool_id" uuid NOT NULL,
        "name" character varying(100) NOT NULL,
        "prefix" character varying(16) NOT NULL,
        "token_hash" character varying(64) NOT NULL,
        "created_by" uuid,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "last_used_at" TIMESTAMP(3) WITH TIME ZONE,
        "expires_at" TIMESTAMP(3) WITH TIME ZONE,
        "revoked_at" TIMESTAMP(3) WITH TIME ZONE,
        CONSTRAINT "worker_enrollment_tokens_pkey" PRIMARY KEY ("organization_id", "id"),
        CONSTRAINT "worker_enrollment_tokens_pool_id_fkey" FOREIGN KEY ("organization_id", "pool_id")
          REFERENCES "worker_pools"("organization_id", "id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`);
    // A worker presents its token before the server knows its organization: found by hash alone.
    await q.query(`CREATE UNIQUE INDEX "worker_enrollment_tokens_token_hash_key" ON "worker_enrollment_tokens" ("token_hash")`);
    await q.query(`CREATE INDEX "worker_enrollment_tokens_pool_created_idx" ON "worker_enrollment_tokens" ("organization_id", "pool_id", "created_at", "id")`);

    await q.query(`
      CREATE TABLE "workers" (
        "organization_id" uuid NOT NULL,
        "id" uuid NOT NULL,
        "pool_id" uuid NOT NULL,
        "enrollment_token_id" uuid NOT NULL,
        "name" character varying(63) NOT NULL,
        "hostname" character varying(253) NOT NULL,
        "labels" jsonb NOT NULL DEFAULT '[]',
        "capacity" jsonb NOT NULL,
        "usage" jsonb,
        "sandboxed" boolean NOT NULL,
        "version" character varying(64) NOT NULL,
        "session_hash" character varying(64) NOT NULL,
        "status" character varying(16) NOT NULL,
        "registered_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "last_seen_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "lease_expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "ended_at" TIMESTAMP(3) WITH TIME ZONE,
        CONSTRAINT "workers_pkey" PRIMARY KEY ("organization_id", "id"),
        CONSTRAINT "workers_pool_id_fkey" FOREIGN KEY ("organization_id", "pool_id")
          REFERENCES "worker_pools"("organization_id", "id") ON DELETE CASCADE ON UPDATE NO ACTION,
        CONSTRAINT "workers_enrollment_token_id_fkey" FOREIGN KEY ("organization_id", "enrollment_token_id")
          REFERENCES "worker_enrollment_tokens"("organization_id", "id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`);
    // A worker's every call presents its session token alone, which tells the organization.
    await q.query(`CREATE UNIQUE INDEX "workers_session_hash_key" ON "workers" ("session_hash")`);
    await q.query(`CREATE INDEX "workers_pool_registered_idx" ON "workers" ("organization_id", "pool_id", "registered_at", "id")`);
    // The sweep for lost workers looks across organizations, at the few whose lease runs.
    await q.query(`CREATE INDEX "workers_lease_idx" ON "workers" ("lease_expires_at") WHERE "status" = 'online'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "workers"`);
    await q.query(`DROP TABLE "worker_enrollment_tokens"`);
    await q.query(`DROP TABLE "worker_pools"`);
  }
}
