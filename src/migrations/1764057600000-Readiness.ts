import { MigrationInterface, QueryRunner } from 'typeorm';

/** Readiness reports, listed newest first per organization and per repository. */
export class Readiness1764057600000 implements MigrationInterface {
  name = 'Readiness1764057600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "readiness_reports" (
        "id" uuid NOT NULL,
        "organization_id" uuid NOT NULL,
        "repo_id" character varying(32) NOT NULL,
        "repo_url" text NOT NULL,
        "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        "apps" json NOT NULL,
        "report" json NOT NULL,
        "commit_hash" character varying(64),
        "branch" character varying(255),
        "has_local_changes" boolean,
        "has_non_remote_commits" boolean,
        "model_used" json,
        "agent_version" character varying(64),
        "level" smallint NOT NULL,
        "uploaded_by" uuid NOT NULL,
        CONSTRAINT "readiness_reports_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "readiness_reports_organization_id_fkey" FOREIGN KEY ("organization_id")
          REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`);
    await q.query(`CREATE INDEX "readiness_reports_organization_created_idx" ON "readiness_reports" ("organization_id", "created_at", "id")`);
    await q.query(`CREATE INDEX "readiness_reports_repository_created_idx" ON "readiness_reports" ("organization_id", "repo_id", "created_at", "id")`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "readiness_reports"`);
  }
}
