import 'reflect-metadata';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/app-config';
import { openDatabase } from '../../src/platform/database/open-database';
import { serverUrl, TEMPLATE_ENV, withAdmin, withDatabase } from './test-database';

/**
 * Migrates one template database with the real migrations; each test file then starts from a
 * copy (PostgreSQL: CREATE DATABASE ... TEMPLATE; PGlite: a copy of the data directory).
 */
export default async function globalSetup(): Promise<void> {
  const url = serverUrl();
  if (url) {
    const template = `ap_template_${process.pid}`;
    await withAdmin(url, async (client) => {
      await client.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`);
      await client.query(`CREATE DATABASE "${template}"`);
    });
    const db = await openDatabase(loadConfig({ DATABASE_URL: withDatabase(url, template) }));
    await db.close();
    process.env[TEMPLATE_ENV] = template;
  } else {
    const dataDir = await mkdtemp(join(tmpdir(), 'ap-template-'));
    const db = await openDatabase(loadConfig({ DATA_DIR: dataDir }));
    await db.close();
    process.env[TEMPLATE_ENV] = dataDir;
  }
}
