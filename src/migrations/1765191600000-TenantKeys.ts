import { MigrationInterface, QueryRunner } from 'typeorm';

/** Tables whose primary key was `(id)` and becomes `(organization_id, id)`. */
const BY_ID = [
  'users',
  'api_keys',
  'sessions',
  'messages',
  'computers',
  'readiness_reports',
  'analytics_facts',
  'webhooks',
  'webhook_deliveries',
  'tool_approvals',
];

/**
 * Foreign keys between tenant tables, before (`(column) REFERENCES table(id)`) and after (led by `organization_id`
 * on both sides). `SET NULL` names its column: nulling `organization_id` too would break its NOT NULL.
 */
const FOREIGN_KEYS: Array<{ table: string; name: string; column: string; references: string; onDelete: 'CASCADE' | 'SET NULL' }> = [
  { table: 'api_keys', name: 'api_keys_user_id_fkey', column: 'user_id', references: 'users', onDelete: 'CASCADE' },
  { table: 'sessions', name: 'sessions_owner_id_fkey', column: 'owner_id', references: 'users', onDelete: 'CASCADE' },
  { table: 'sessions', name: 'sessions_computer_id_fkey', column: 'computer_id', references: 'computers', onDelete: 'SET NULL' },
  { table: 'sessions', name: 'sessions_work_computer_id_fkey', column: 'work_computer_id', references: 'computers', onDelete: 'SET NULL' },
  { table: 'computers', name: 'computers_owner_id_fkey', column: 'owner_id', references: 'users', onDelete: 'CASCADE' },
  { table: 'messages', name: 'messages_session_id_fkey', column: 'session_id', references: 'sessions', onDelete: 'CASCADE' },
  { table: 'provisioning_steps', name: 'provisioning_steps_computer_id_fkey', column: 'computer_id', references: 'computers', onDelete: 'CASCADE' },
  {
    table: 'provisioning_steps',
    name: 'provisioning_steps_install_session_id_fkey',
    column: 'install_session_id',
    references: 'sessions',
    onDelete: 'SET NULL',
  },
  { table: 'tool_approvals', name: 'tool_approvals_session_id_fkey', column: 'session_id', references: 'sessions', onDelete: 'CASCADE' },
  { table: 'webhook_deliveries', name: 'webhook_deliveries_webhook_id_fkey', column: 'webhook_id', references: 'webhooks', onDelete: 'CASCADE' },
];

/**
 * Every tenant table's keys are led by `organization_id`, so the schema can be sharded by organization (Citus
 * distributes a table by one column, and its primary keys, unique indexes and foreign keys between distributed
 * tables must include it). `messages` and `provisioning_steps` get the column, copied from their session and
 * computer. Unique indexes end with `organization_id` where the lookups they serve start elsewhere; the global
 * lookups (key and agent token hashes, rate-limit windows, the rollup's one state row) stay as they are.
 */
export class TenantKeys1765191600000 implements MigrationInterface {
  name = 'TenantKeys1765191600000';

  async up(q: QueryRunner): Promise<void> {
    for (const fk of FOREIGN_KEYS) await q.query(`ALTER TABLE "${fk.table}" DROP CONSTRAINT "${fk.name}"`);

    await q.query(`ALTER TABLE "messages" ADD "organization_id" uuid`);
    await q.query(`UPDATE "messages" m SET "organization_id" = s."organization_id" FROM "sessions" s WHERE s."id" = m."session_id"`);
    await q.query(`ALTER TABLE "messages" ALTER COLUMN "organization_id" SET NOT NULL`);
    await q.query(`ALTER TABLE "provisioning_steps" ADD "organization_id" uuid`);
    await q.query(`UPDATE "provisioning_steps" p SET "organization_id" = c."organization_id" FROM "computers" c WHERE c."id" = p."computer_id"`);
    await q.query(`ALTER TABLE "provisioning_steps" ALTER COLUMN "organization_id" SET NOT NULL`);

    for (const table of BY_ID) {
      await q.query(`ALTER TABLE "${table}" DROP CONSTRAINT "${table}_pkey", ADD CONSTRAINT "${table}_pkey" PRIMARY KEY ("organization_id", "id")`);
    }
    await q.query(
      `ALTER TABLE "provisioning_steps" DROP CONSTRAINT "provisioning_steps_pkey",
         ADD CONSTRAINT "provisioning_steps_pkey" PRIMARY KEY ("organization_id", "computer_id", "position")`,
    );
    await q.query(
      `ALTER TABLE "event_checkpoints" DROP CONSTRAINT "event_checkpoints_pkey",
         ADD CONSTRAINT "event_checkpoints_pkey" PRIMARY KEY ("organization_id", "listener")`,
    );
    // Every statement on one row names its organization, but the operator's `key:revoke <id>`, which does not know it.
    await q.query(`CREATE INDEX "api_keys_id_idx" ON "api_keys" ("id")`);

    // Trailing organization_id: a session's messages and a webhook's deliveries are still found by session and webhook.
    await q.query(`DROP INDEX "messages_session_seq_key"`);
    await q.query(`CREATE UNIQUE INDEX "messages_session_seq_key" ON "messages" ("session_id", "seq", "organization_id")`);
    // Pages of one role join on the organization too: without it there, the planner walks every role by seq instead.
    await q.query(`DROP INDEX "messages_session_role_seq_idx"`);
    await q.query(`CREATE INDEX "messages_session_role_seq_idx" ON "messages" ("session_id", "role", "seq", "organization_id")`);
    await q.query(
      `ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_event",
         ADD CONSTRAINT "webhook_deliveries_event" UNIQUE ("webhook_id", "event_id", "organization_id")`,
    );

    for (const fk of FOREIGN_KEYS) {
      const onDelete = fk.onDelete === 'SET NULL' ? `SET NULL ("${fk.column}")` : fk.onDelete;
      await q.query(
        `ALTER TABLE "${fk.table}" ADD CONSTRAINT "${fk.name}" FOREIGN KEY ("organization_id", "${fk.column}")
           REFERENCES "${fk.references}"("organization_id", "id") ON DELETE ${onDelete}`,
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const fk of FOREIGN_KEYS) await q.query(`ALTER TABLE "${fk.table}" DROP CONSTRAINT "${fk.name}"`);

    await q.query(
      `ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_event",
         ADD CONSTRAINT "webhook_deliveries_event" UNIQUE ("webhook_id", "event_id")`,
    );
    await q.query(`DROP INDEX "messages_session_seq_key"`);
    await q.query(`CREATE UNIQUE INDEX "messages_session_seq_key" ON "messages" ("session_id", "seq")`);
    await q.query(`DROP INDEX "messages_session_role_seq_idx"`);
    await q.query(`CREATE INDEX "messages_session_role_seq_idx" ON "messages" ("session_id", "role", "seq")`);

    await q.query(`DROP INDEX "api_keys_id_idx"`);
    await q.query(
      `ALTER TABLE "event_checkpoints" DROP CONSTRAINT "event_checkpoints_pkey",
         ADD CONSTRAINT "event_checkpoints_pkey" PRIMARY KEY ("listener", "organization_id")`,
    );
    await q.query(
      `ALTER TABLE "provisioning_steps" DROP CONSTRAINT "provisioning_steps_pkey",
         ADD CONSTRAINT "provisioning_steps_pkey" PRIMARY KEY ("computer_id", "position")`,
    );
    for (const table of BY_ID) {
      await q.query(`ALTER TABLE "${table}" DROP CONSTRAINT "${table}_pkey", ADD CONSTRAINT "${table}_pkey" PRIMARY KEY ("id")`);
    }

    await q.query(`ALTER TABLE "provisioning_steps" DROP COLUMN "organization_id"`);
    await q.query(`ALTER TABLE "messages" DROP COLUMN "organization_id"`);

    for (const fk of FOREIGN_KEYS) {
      await q.query(
        `ALTER TABLE "${fk.table}" ADD CONSTRAINT "${fk.name}" FOREIGN KEY ("${fk.column}")
           REFERENCES "${fk.references}"("id") ON DELETE ${fk.onDelete}`,
      );
    }
  }
}
