// Runs every loader in bench/load/ once per database, remembering what it loaded so a kept database is reused.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { seconds } from './bulk.mjs';

/**
 * A loader is a module exporting `name`, optionally `params(env)` (its scale, from BENCH_* variables), and
 * `load({ db, params, fixtures, log })` returning a summary of what it wrote.
 */
export async function runLoaders({ dir, db, fixtures, env, log }) {
  await db.query(`CREATE SCHEMA IF NOT EXISTS bench`);
  await db.query(`CREATE TABLE IF NOT EXISTS bench.loads (name text PRIMARY KEY, params jsonb NOT NULL, summary jsonb NOT NULL, seconds float8 NOT NULL)`);
  const results = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.mjs'))
    .sort()) {
    const loader = await import(pathToFileURL(join(dir, file)).href);
    const params = loader.params?.(env) ?? {};
    const done = (await db.query('SELECT * FROM bench.loads WHERE name = $1', [loader.name])).rows[0];
    if (done) {
      if (!isDeepStrictEqual(done.params, params)) {
        log(`${loader.name}: reusing the loaded ${JSON.stringify(done.params)}, not ${JSON.stringify(params)}`);
      }
      results.push({ name: loader.name, params: done.params, summary: done.summary, seconds: done.seconds, reused: true });
      continue;
    }
    log(`${loader.name}: loading ${JSON.stringify(params)}`);
    const started = Date.now();
    const summary = await loader.load({ db, params, fixtures, log: (line) => log(`${loader.name}: ${line}`) });
    const took = Number(seconds(started));
    await db.query('INSERT INTO bench.loads (name, params, summary, seconds) VALUES ($1, $2, $3, $4)', [loader.name, params, summary, took]);
    log(`${loader.name}: loaded ${JSON.stringify(summary)} in ${took} s`);
    results.push({ name: loader.name, params, summary, seconds: took, reused: false });
  }
  return results;
}
