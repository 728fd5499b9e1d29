import { MigrationInterface, QueryRunner } from 'typeorm';

/** Computers, their provisioning steps (also the scheduler's claim queue), and sessions' keys to them and their turns' computer. */
export class Computers1763884800000 implements MigrationInterface {
  name = 'Computers1763884800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "computers" (
        "id" uuid NOT NULL,
        "organization_id" uuid NOT NULL,
        "owner_id" uuid NOT NULL,
        "owner_principal_kind" character varying(16) NOT NULL,
        "name" character varying(63) NOT NULL,
        "provider" character varying(32) NOT NULL,
        "host_id" uuid,
        "remote_user" character varying(63),
        "hostname" character varying(253),
        "repos" jsonb NOT NULL DEFAULT '[]',
        "auto_install_deps" boolean NOT NULL DEFAULT false,
        "source" jsonb,
        "status" character varying(16) NOT NULL,
        "cloned_repo_directories" jsonb NOT NULL DEFAULT '[]',
        "agent_token_hash" character varying(64) NOT NULL,
        "agent_token_created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "agent_connected_at" TIMESTAMP(3) WITH TIME ZONE,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        CONSTRAINT "computers_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "computers_organization_id_fkey" FOREIGN KEY ("organization_id")
          REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION,
        CONSTRAINT "computers_owner_id_fkey" FOREIGN KEY ("owner_id")
          REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`);
    await q.query(`CREATE UNIQUE INDEX "computers_agent_token_hash_key" ON "computers" ("agent_token_hash")`);
    await q.query(`CREATE INDEX "computers_organization_created_idx" ON "computers" ("organization_id", "created_at", "id")`);
    await q.query(`CREATE INDEX "computers_owner_created_idx" ON "computers" ("owner_id", "created_at", "id")`);
    await q.query(`
      CREATE TABLE "provisioning_steps" (
        "computer_id" uuid NOT NULL,
        "position" smallint NOT NULL,
        "step_id" character varying(32) NOT NULL,
        "name" character varying(100) NOT NULL,
        "status" character varying(16) NOT NULL,
        "error" text,
        "started_at" TIMESTAMP(3) WITH TIME ZONE,
        "completed_at" TIMESTAMP(3) WITH TIME ZONE,
        "install_session_id" uuid,
        "attempts" integer NOT NULL DEFAULT '0',
        "claim_id" uuid,
        "lease_expires_at" TIMESTAMP(3) WITH TIME ZONE,
        CONSTRAINT "provisioning_steps_pkey" PRIMARY KEY ("computer_id", "position"),
        CONSTRAINT "provisioning_steps_computer_id_fkey" FOREIGN KEY ("computer_id")
          REFERENCES "computers"("id") ON DELETE CASCADE ON UPDATE NO ACTION,
        CONSTRAINT "provisioning_steps_install_session_id_fkey" FOREIGN KEY ("install_session_id")
          REFERENCES "sessions"("id") ON DELETE SET NULL ON UPDATE NO ACTION
      )`);
    await q.query(
      `CREATE INDEX "provisioning_steps_claimable_idx" ON "provisioning_steps" ("status", "lease_expires_at") WHERE status IN ('pending', 'running')`,
    );
    await q.query(`ALTER TABLE "sessions" ADD "turn_computer_id" uuid`);
    // Deleting a computer disconnects its sessions; the index keeps that from scanning every session.
    await q.query(`CREATE INDEX "sessions_work_computer_idx" ON "sessions" ("work_computer_id") WHERE work_computer_id IS NOT NULL`);
    await q.query(`
      ALTER TABLE "sessions" ADD CONSTRAINT "sessions_computer_id_fkey" FOREIGN KEY ("computer_id")
        REFERENCES "computers"("id") ON DELETE SET NULL ON UPDATE NO ACTION`);
    await q.query(`
      ALTER TABLE "sessions" ADD CONSTRAINT "sessions_work_computer_id_fkey" FOREIGN KEY ("work_computer_id")
        REFERENCES "computers"("id") ON DELETE SET NULL ON UPDATE NO ACTION`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "sessions" DROP CONSTRAINT "sessions_work_computer_id_fkey"`);
    await q.query(`ALTER TABLE "sessions" DROP CONSTRAINT "sessions_computer_id_fkey"`);
    await q.query(`DROP INDEX "sessions_work_computer_idx"`);
    await q.query(`ALTER TABLE "sessions" DROP COLUMN "turn_computer_id"`);
    await q.query(`DROP TABLE "provisioning_steps"`);
    await q.query(`DROP TABLE "computers"`);
  }
}
