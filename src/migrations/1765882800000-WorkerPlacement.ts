import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where a managed computer runs: on the server's host (as before), or on a worker of one of the organization's pools.
 * `on_workers` is the one predicate that separates the two: labels without a pool leave `pool_id` NULL.
 */
export class WorkerPlacement1765882800000 implements MigrationInterface {
  name = 'WorkerPlacement1765882800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE "computers"
        ADD "on_workers" boolean NOT NULL DEFAULT false,
        ADD "pool_id" uuid,
        ADD "placement_labels" jsonb NOT NULL DEFAULT '[]',
        ADD "worker_id" uuid,
        ADD "placed_at" TIMESTAMP(3) WITH TIME ZONE,
        ADD "waiting_since" TIMESTAMP(3) WITH TIME ZONE`);
    // A pool that still has computers cannot go: the service answers 409 before this would refuse it.
    await q.query(`
      ALTER TABLE "computers" ADD CONSTRAINT "computers_pool_id_fkey" FOREIGN KEY ("organization_id", "pool_id")
        REFERENCES "worker_pools"("organization_id", "id") ON DELETE RESTRICT ON UPDATE NO ACTION`);
    // A forgotten worker leaves its computers unplaced (recovery clears worker_id first; this is the backstop).
    await q.query(`
      ALTER TABLE "computers" ADD CONSTRAINT "computers_worker_id_fkey" FOREIGN KEY ("organization_id", "worker_id")
        REFERENCES "workers"("organization_id", "id") ON DELETE SET NULL ("worker_id") ON UPDATE NO ACTION`);
    await q.query(`CREATE INDEX "computers_worker_idx" ON "computers" ("organization_id", "worker_id") WHERE "worker_id" IS NOT NULL`);
    await q.query(
      `CREATE INDEX "computers_unplaced_idx" ON "computers" ("organization_id", "created_at") WHERE "on_workers" AND "worker_id" IS NULL AND "status" = 'provisioning'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "computers_unplaced_idx"`);
    await q.query(`DROP INDEX "computers_worker_idx"`);
    await q.query(`ALTER TABLE "computers" DROP CONSTRAINT "computers_worker_id_fkey"`);
    await q.query(`ALTER TABLE "computers" DROP CONSTRAINT "computers_pool_id_fkey"`);
    await q.query(
      `ALTER TABLE "computers" DROP COLUMN "waiting_since", DROP COLUMN "placed_at", DROP COLUMN "worker_id", DROP COLUMN "placement_labels", DROP COLUMN "pool_id", DROP COLUMN "on_workers"`,
    );
  }
}
