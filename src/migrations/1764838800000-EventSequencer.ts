import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Events are numbered after their command commits, by one sequencer at a time, instead of under a
 * per-organization counter locked from the write to the commit (which made an organization's
 * commits wait for each other). An event is written with its `position` (the order it was
 * written in) and no `seq`; the sequencer gives it the organization's next number.
 */
export class EventSequencer1764838800000 implements MigrationInterface {
  name = 'EventSequencer1764838800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "events" ADD COLUMN "position" bigserial NOT NULL`);
    await q.query(`ALTER TABLE "events" DROP CONSTRAINT "events_pkey"`);
    await q.query(`ALTER TABLE "events" ALTER COLUMN "seq" DROP NOT NULL`);
    await q.query(`ALTER TABLE "events" ADD CONSTRAINT "events_pkey" PRIMARY KEY ("organization_id", "position")`);
    await q.query(`CREATE UNIQUE INDEX "events_seq" ON "events" ("organization_id", "seq")`);
    await q.query(`CREATE INDEX "events_unsequenced" ON "events" ("position") WHERE "seq" IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM "events" WHERE "seq" IS NULL`);
    await q.query(`DROP INDEX "events_unsequenced"`);
    await q.query(`DROP INDEX "events_seq"`);
    await q.query(`ALTER TABLE "events" DROP CONSTRAINT "events_pkey"`);
    await q.query(`ALTER TABLE "events" ALTER COLUMN "seq" SET NOT NULL`);
    await q.query(`ALTER TABLE "events" ADD CONSTRAINT "events_pkey" PRIMARY KEY ("organization_id", "seq")`);
    await q.query(`ALTER TABLE "events" DROP COLUMN "position"`);
  }
}
