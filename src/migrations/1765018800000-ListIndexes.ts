import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The members list and an organization's API keys (`scope=organization`) are paged newest first by
 * `(created_at, id)` within an organization, and neither had an index in that order: every page read and
 * sorted all of the organization's users, or scanned every organization's keys. Found by the statement-plans
 * test, which plans each list statement as a large table would have it planned.
 */
export class ListIndexes1765018800000 implements MigrationInterface {
  name = 'ListIndexes1765018800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX "users_organization_created_idx" ON "users" ("organization_id", "created_at", "id")`);
    await q.query(`CREATE INDEX "api_keys_organization_created_idx" ON "api_keys" ("organization_id", "created_at", "id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "api_keys_organization_created_idx"`);
    await q.query(`DROP INDEX "users_organization_created_idx"`);
  }
}
