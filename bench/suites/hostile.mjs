// Bodies built to make the server work before it refuses them (issue: hostile input), sent one at a time while
// /livez is asked every 5 ms on connections of its own: how long each refusal takes, how big its answer is, and how
// long /livez waited meanwhile. The event loop is shared: a refusal that blocks it delays every other client.
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiKey, ensureFixtures } from '../lib/fixtures.mjs';
import { cpuMillis } from '../lib/processes.mjs';

export const name = 'hostile';
export const needsData = false;

const RUNS = 5;
const LIVEZ_P99_TARGET_MS = 50;
const MAX_ANSWER_BYTES = 4096;
/** Items of two bytes (`0,`), to fill most of the default 1 MiB body limit: refused before parsing (JSON_MAX_VALUES). */
const ITEMS = 499_000;
/** Under JSON_MAX_VALUES (100,000): parsed, then refused by the schema's counts. */
const UNDER_VALUES = 90_000;
const FIELDS = 80_000;

const BODIES = [
  {
    name: 'webhook, 499,000 event types',
    path: '/api/v0/organization/webhooks',
    body: () => ({ url: 'https://example.com/hook', eventTypes: Array(ITEMS).fill(0) }),
  },
  { name: 'session, 499,000 tags', path: '/api/v0/sessions', body: () => ({ title: 'x', sessionSettings: { tags: Array(ITEMS).fill(0) } }) },
  {
    name: 'webhook, 90,000 event types',
    path: '/api/v0/organization/webhooks',
    body: () => ({ url: 'https://example.com/hook', eventTypes: Array(UNDER_VALUES).fill(0) }),
  },
  { name: 'session, 90,000 tags', path: '/api/v0/sessions', body: () => ({ title: 'x', sessionSettings: { tags: Array(UNDER_VALUES).fill(0) } }) },
  {
    name: 'webhook, 45,000 empty objects',
    path: '/api/v0/organization/webhooks',
    body: () => ({ url: 'https://example.com/hook', eventTypes: Array.from({ length: UNDER_VALUES / 2 }, () => ({})) }),
  },
  {
    name: 'session, 80,000 unknown fields',
    path: '/api/v0/sessions',
    body: () => Object.fromEntries([['title', 0], ...Array.from({ length: FIELDS }, (_, i) => [`f${i}`, 0])]),
  },
];

export function selected(only) {
  return !only || only.some((part) => 'hostile'.includes(part));
}

/** Resolves to the results, with `pass` (every body refused 400 in a small answer, /livez p99 under target) and `markdown`. */
export async function run({ db, app, log }) {
  const key = await createApiKey(db, await ensureFixtures(db));
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const rows = [];
  for (const hostile of BODIES) {
    const text = JSON.stringify(hostile.body());
    const refusals = [];
    const livez = [];
    const statuses = new Set();
    let answerBytes = 0;
    const cpuBefore = cpuMillis(app.pid);
    for (let i = 0; i < RUNS; i++) {
      let done = false;
      const polling = (async () => {
        while (!done) {
          const started = performance.now();
          await (await globalThis.fetch(`${app.url}/livez`)).arrayBuffer();
          livez.push(performance.now() - started);
          await sleep(5);
        }
      })();
      await sleep(50);
      const started = performance.now();
      const res = await globalThis.fetch(app.url + hostile.path, { method: 'POST', headers, body: text });
      answerBytes = Math.max(answerBytes, (await res.arrayBuffer()).byteLength);
      refusals.push(performance.now() - started);
      statuses.add(res.status);
      await sleep(50);
      done = true;
      await polling;
    }
    const cpuAfter = cpuMillis(app.pid);
    const row = {
      name: hostile.name,
      // The app's CPU time over the runs, per refusal (the /livez answers meanwhile included): what a refusal costs,
      // whatever else the machine runs, where the /livez delay also measures the other processes.
      cpuMsPerRefusal: cpuBefore === null || cpuAfter === null ? null : Math.round((cpuAfter - cpuBefore) / RUNS),
      bodyBytes: Buffer.byteLength(text),
      statuses: [...statuses],
      answerBytes,
      refusalMs: { p50: percentile(refusals, 0.5), max: percentile(refusals, 1) },
      livezMs: { samples: livez.length, p50: percentile(livez, 0.5), p99: percentile(livez, 0.99), max: percentile(livez, 1) },
    };
    const refused = row.statuses.length === 1 && row.statuses[0] === 400 && row.answerBytes <= MAX_ANSWER_BYTES;
    row.verdict = !refused ? `FAILED: ${JSON.stringify(row.statuses)}, ${row.answerBytes} bytes` : row.livezMs.p99 < LIVEZ_P99_TARGET_MS ? 'pass' : 'fail';
    log(`hostile: ${row.name}: refused in ${row.refusalMs.p50} ms (p50), ${row.answerBytes} bytes; /livez p99 ${row.livezMs.p99} ms: ${row.verdict}`);
    rows.push(row);
  }
  return { pass: rows.every((row) => row.verdict === 'pass'), rows, markdown: markdown(rows) };
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] * 10) / 10;
};

function markdown(rows) {
  const lines = [
    `## Hostile bodies (${RUNS} runs each, one at a time; /livez asked every 5 ms meanwhile; target /livez p99 < ${LIVEZ_P99_TARGET_MS} ms, answer ≤ ${MAX_ANSWER_BYTES} bytes)`,
    '',
    '| Body | bytes | status | answer bytes | refusal p50 ms | refusal max ms | app CPU ms per refusal | /livez p50 ms | /livez p99 ms | /livez max ms | |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${r.bodyBytes} | ${r.statuses.join(', ')} | ${r.answerBytes} | ${r.refusalMs.p50} | ${r.refusalMs.max} | ${r.cpuMsPerRefusal ?? '—'} | ${r.livezMs.p50} | ${r.livezMs.p99} | ${r.livezMs.max} | ${r.verdict} |`,
    );
  }
  return lines.join('\n');
}
