import { MigrationInterface, QueryRunner } from 'typeorm';

/** The plugin catalogs agents report of their organization's marketplaces: the latest per organization and marketplace. */
export class PluginCatalogs1765450800000 implements MigrationInterface {
  name = 'PluginCatalogs1765450800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "plugin_catalogs" (
        "organization_id" uuid NOT NULL,
        "marketplace" character varying(256) NOT NULL,
        "url" text NOT NULL,
        "computer_id" uuid NOT NULL,
        "commit_sha" character varying(64),
        "plugins" json NOT NULL,
        "error" text,
        "reported_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL,
        CONSTRAINT "plugin_catalogs_pkey" PRIMARY KEY ("organization_id", "marketplace"),
        CONSTRAINT "plugin_catalogs_organization_id_fkey" FOREIGN KEY ("organization_id")
          REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "plugin_catalogs"`);
  }
}
