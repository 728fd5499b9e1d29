import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { loadConfig } from '../../src/config/app-config';
import { openDatabase } from '../../src/platform/database/open-database';
import { CODE_CACHE_DIR } from './code-cache';
import { serverUrl, TEMPLATE_CACHE_DIR, TEMPLATE_ENV, withAdmin, withDatabase } from './test-database';

const ROOT = join(__dirname, '..', '..');
/** What the migrated template is made of: the migrations, the code that opens and migrates a database, its settings. */
const TEMPLATE_SOURCES = ['src/migrations', 'src/platform/database', 'src/schema.ts', 'src/config', 'node_modules/@electric-sql/pglite/package.json'];

/**
 * Migrates one template database with the real migrations; each test file then starts from a
 * copy (PostgreSQL: CREATE DATABASE ... TEMPLATE; PGlite: a copy of the data directory).
 * The PGlite template is kept between runs (node_modules/.cache/test-template), under the hash of what makes it: opening
 * and migrating it took 9 s of a lone file's 15.
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
    process.env[TEMPLATE_ENV] = await keptTemplate();
  }
}

async function keptTemplate(): Promise<string> {
  const kept = join(TEMPLATE_CACHE_DIR, await templateKey());
  if (existsSync(join(kept, '.complete'))) return kept;
  await mkdir(TEMPLATE_CACHE_DIR, { recursive: true });
  // Made aside in the same folder and renamed whole, so a run beside this one never copies half a template.
  const dataDir = await mkdtemp(join(TEMPLATE_CACHE_DIR, 'making-'));
  const db = await openDatabase(loadConfig({ DATA_DIR: dataDir }));
  await db.close();
  await writeFile(join(dataDir, '.complete'), '');
  try {
    await rename(dataDir, kept);
  } catch {
    // Another run made it first.
    await rm(dataDir, { recursive: true, force: true });
  }
  await pruneTemplates(kept);
  return kept;
}

async function templateKey(): Promise<string> {
  const hash = createHash('sha256');
  const files = async (path: string): Promise<string[]> => {
    const info = await stat(path);
    if (!info.isDirectory()) return [path];
    const entries = (await readdir(path)).sort();
    return (await Promise.all(entries.map((entry) => files(join(path, entry))))).flat();
  };
  for (const source of TEMPLATE_SOURCES) {
    for (const file of await files(join(ROOT, source)))
      hash
        .update(relative(ROOT, file))
        .update('\0')
        .update(await readFile(file))
        .update('\0');
  }
  return hash.digest('hex').slice(0, 32);
}

/** Templates other than the current one, once a day old (a branch switched back may want one), and abandoned halves. */
async function pruneTemplates(current: string): Promise<void> {
  const dayAgo = Date.now() - 86_400_000;
  for (const entry of await readdir(TEMPLATE_CACHE_DIR)) {
    const path = join(TEMPLATE_CACHE_DIR, entry);
    if (path === current) continue;
    const made = (await stat(path).catch(() => null))?.mtimeMs ?? Infinity;
    if (made < dayAgo) await rm(path, { recursive: true, force: true });
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
