import { MigrationInterface, QueryRunner } from 'typeorm';

/** Enterprise control revisions (the latest is the organization's controls), and the index session retention deletes by. */
export class EnterpriseControls1763971200000 implements MigrationInterface {
  name = 'EnterpriseControls1763971200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "enterprise_control_revisions" (
        "organization_id" uuid NOT NULL,
        "revision" integer NOT NULL,
        "settings" json NOT NULL,
        "diff" json NOT NULL,
        "user_id" uuid NOT NULL,
        "user_email" character varying(320) NOT NULL,
        "user_name" character varying(200) NOT NULL,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        CONSTRAINT "enterprise_control_revisions_pkey" PRIMARY KEY ("organization_id", "revision"),
        CONSTRAINT "enterprise_control_revisions_organization_id_fkey" FOREIGN KEY ("organization_id")
          REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`);
    await q.query(`CREATE INDEX "sessions_organization_updated_idx" ON "sessions" ("organization_id", "updated_at")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "sessions_organization_updated_idx"`);
    await q.query(`DROP TABLE "enterprise_control_revisions"`);
  }
}
