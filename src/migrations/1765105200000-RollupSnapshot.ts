import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The rollup's look at new facts keeps its whole snapshot, not only its xmin: facts of a transaction that committed
 * before the look but after an older one began (txid above xmin, yet visible) were marked dirty again at the next look,
 * so a day rolled up in between was rolled up twice. Only on PostgreSQL, where other transactions run beside the look
 * (CI's PostgreSQL pass, analytics-endpoints-invariants: "a second rollup rolls up nothing").
 */
export class RollupSnapshot1765105200000 implements MigrationInterface {
  name = 'RollupSnapshot1765105200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "analytics_rollup_state" ADD COLUMN "seen" text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "analytics_rollup_state" DROP COLUMN "seen"`);
  }
}
