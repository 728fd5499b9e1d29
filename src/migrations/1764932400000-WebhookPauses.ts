import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether a webhook takes an event is decided by when the event was committed, not by when the
 * queueing listener reaches it: the last pause is kept as a range of sequence numbers (after
 * `paused_after_seq`, up to `resumed_after_seq`, open while the webhook is disabled). Before this, an
 * event made while a webhook was disabled was sent if the listener reached it after the webhook was
 * enabled again, and one made before a pause was dropped if the listener reached it during the pause.
 */
export class WebhookPauses1764932400000 implements MigrationInterface {
  name = 'WebhookPauses1764932400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "webhooks" ADD "paused_after_seq" bigint, ADD "resumed_after_seq" bigint`);
    await q.query(
      `UPDATE "webhooks" w SET "paused_after_seq" = COALESCE((SELECT "last_seq" FROM "event_sequences" s WHERE s."organization_id" = w."organization_id"), 0)
       WHERE NOT w."enabled"`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "webhooks" DROP COLUMN "paused_after_seq", DROP COLUMN "resumed_after_seq"`);
  }
}
