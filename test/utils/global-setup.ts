import 'reflect-metadata';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/app-config';
import { openDatabase } from '../../src/platform/database/open-database';
import { CODE_CACHE_DIR } from './code-cache';
import { serverUrl, TEMPLATE_ENV, withAdmin, withDatabase } from './test-database';

/**
 * Migrates one template database with the real migrations; each test file then starts from a
 * copy (PostgreSQL: CREATE DATABASE ... TEMPLATE; PGlite: a copy of the data directory).
 */
export default async function globalSetup(): Promise<void> {
  await pruneCodeCache();
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

/** The compiled code test/utils/code-cache.js keeps (requiring it also puts it to work here, for `--runInBand`): entries older than a week are for code that changed since. */
async function pruneCodeCache(): Promise<void> {
  const weekAgo = Date.now() - 7 * 86_400_000;
  const versions = await readdir(CODE_CACHE_DIR).catch(() => [] as string[]);
  for (const version of versions) {
    const dir = join(CODE_CACHE_DIR, version);
    for (const entry of await readdir(dir).catch(() => [] as string[])) {
      const file = join(dir, entry);
      const made = (await stat(file).catch(() => null))?.mtimeMs ?? Infinity;
      if (made < weekAgo) await rm(file, { force: true });
    }
  }
}
