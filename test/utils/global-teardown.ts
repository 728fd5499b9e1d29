import { rm } from 'node:fs/promises';
import { serverUrl, TEMPLATE_ENV, withAdmin } from './test-database';

export default async function globalTeardown(): Promise<void> {
  const template = process.env[TEMPLATE_ENV];
  if (!template) return;
  const url = serverUrl();
  if (url) await withAdmin(url, (client) => client.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`));
  else await rm(template, { recursive: true, force: true });
}
