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
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "worker_enrollment_tokens"`);
    await q.query(`DROP TABLE "worker_pools"`);
  }
}
