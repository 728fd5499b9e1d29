import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A message changes its session's `updated_at`: with an index on it, every such update rewrote every index of the
 * row (never HOT). Retention, its one reader, finds idle sessions through the creation index instead (a session's
 * last activity is never before its creation). Free room in each page lets the updated row stay on it.
 */
export class HotSessionRows1765623600000 implements MigrationInterface {
  name = 'HotSessionRows1765623600000';

  async up(q: QueryRunner): Promise<void> {
    // What retention now relies on; a history import could once store a last activity before the creation.
    await q.query(`UPDATE "sessions" SET "updated_at" = "created_at" WHERE "updated_at" < "created_at"`);
    await q.query(`DROP INDEX "sessions_organization_updated_idx"`);
    await q.query(`ALTER TABLE "sessions" SET (fillfactor = 80)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "sessions" RESET (fillfactor)`);
    await q.query(`CREATE INDEX "sessions_organization_updated_idx" ON "sessions" ("organization_id", "updated_at")`);
  }
}
