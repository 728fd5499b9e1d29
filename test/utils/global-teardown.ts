import { serverUrl, TEMPLATE_ENV, withAdmin } from './test-database';

/** Drops the PostgreSQL template; a PGlite template is kept for the next run (global-setup.ts). */
export default async function globalTeardown(): Promise<void> {
  const template = process.env[TEMPLATE_ENV];
  if (!template) return;
  const url = serverUrl();
  if (url) await withAdmin(url, (client) => client.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`));
}
