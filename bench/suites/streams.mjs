// The delay from an event's commit to a stream client, with 100 event streams (server-sent events) open while
// messages are added to the session they follow, on PostgreSQL and PGlite.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNodeServer } from '../lib/processes.mjs';

export const name = 'streams';
export const needsData = false;

const STREAMS = 100;
const MESSAGES = 200;

export function selected(only) {
  return !only || only.some((part) => 'streams'.includes(part) || part.includes('stream'));
}

/**
 * Per engine: a server of its own, an organization keeping message history, 100 streams of one session (each its
 * own connection, 10 API keys with 10 streams each: the per-credential cap), then 200 messages added one after
 * another. For each message and stream: the time from the add-message response (the commit is done by then) to
 * the stream's receipt of its `message.added` (negative: the stream had it before the writer had its answer),
 * and from the request's start (an upper bound of commit-to-client). Pass: every stream got every message, in
 * order, once.
 */
export async function run({ root, databaseUrl, results, log }) {
  const engines = [];
  for (const engine of ['postgres', 'pglite']) {
    log(`streams (${engine}): seeding`);
    const dataDir = mkdtempSync(join(tmpdir(), `bench-streams-${engine}-`));
    const serverEnv = {
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOCAL_AGENTS: 'off',
      RATE_LIMIT_CREDENTIAL_PER_MINUTE: '0',
      RATE_LIMIT_ORGANIZATION_PER_MINUTE: '0',
      RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0',
      ...(engine === 'postgres' ? { DATABASE_URL: databaseUrl, DATABASE_POOL_SIZE: '10', SECRETS_KEY: randomBytes(32).toString('base64') } : {}),
    };
    try {
      const keys = await seedKeys(root, serverEnv, STREAMS / 10);
      log(`streams (${engine}): starting the server`);
      const server = await startNodeServer({
        name: `app-streams-${engine}`,
        script: join(root, 'dist/main.js'),
        env: serverEnv,
        logFile: join(results, `app-streams-${engine}.log`),
        healthPath: '/healthz',
      });
      try {
        engines.push({ engine, ...(await measure(server.url, keys, (line) => log(`streams (${engine}): ${line}`))) });
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const pass = engines.every((e) => e.pass);
  return { pass, engines, markdown: markdown(engines) };
}

async function seedKeys(root, serverEnv, count) {
  const require = createRequire(join(root, 'package.json'));
  require('reflect-metadata');
  const { NestFactory } = require('@nestjs/core');
  const { loadConfig } = require(join(root, 'dist/config/app-config.js'));
  const { CliModule } = require(join(root, 'dist/cli/cli.module.js'));
  const { OrganizationsService, ApiKeysService, Role } = require(join(root, 'dist/modules/auth/index.js'));
  // What the operator's CLI runs on: the Auth services, the event log (creating a key raises api_key.created) and the contracts' defaults, no HTTP.
  const module = CliModule.register(loadConfig(serverEnv));
  const app = await NestFactory.createApplicationContext(module, { logger: false, abortOnError: false });
  try {
    const run = randomBytes(3).toString('hex');
    const org = await app.get(OrganizationsService).createOrganization({ slug: `streams-${run}`, name: 'Streams', features: { messageHistory: true } });
    const user = await app.get(OrganizationsService).createUser(org.slug, { email: `owner@streams-${run}.example`, name: 'Owner', role: Role.Owner });
    const keys = [];
    for (let i = 0; i < count; i++) keys.push((await app.get(ApiKeysService).create({ organizationId: org.id, userId: user.id, name: `bench ${i}` })).key);
    return keys;
  } finally {
    await app.close();
  }
}

async function measure(url, keys, log) {
  const json = async (path, key, body) => {
    const res = await globalThis.fetch(url + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${path} answered ${res.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };
  const session = await json('/api/v0/sessions', keys[0], { title: 'streamed' });
  /** messageId -> {sentAt, answeredAt} */
  const sent = new Map();
  const streams = [];
  for (let i = 0; i < STREAMS; i++)
    streams.push(await openStream(url, `/api/v0/sessions/${session.sessionId}/events?types=message.added`, keys[i % keys.length]));
  log(`${streams.filter((s) => s.status === 200).length} streams open`);
  for (let i = 0; i < MESSAGES; i++) {
    const sentAt = performance.now();
    const answer = await json(`/api/v0/sessions/${session.sessionId}/messages`, keys[0], { text: `message ${i}` });
    sent.set(answer.messageId, { sentAt, answeredAt: performance.now() });
    await sleep(10);
  }
  const deadline = Date.now() + 30_000;
  while (streams.some((s) => s.received.length < MESSAGES) && Date.now() < deadline) await sleep(50);
  for (const s of streams) s.close();
  const fromAnswer = [];
  const fromRequest = [];
  let complete = true;
  const order = [...sent.keys()];
  for (const s of streams) {
    if (s.status !== 200 || s.received.map((r) => r.messageId).join() !== order.join()) complete = false;
    for (const r of s.received) {
      const at = sent.get(r.messageId);
      if (!at) continue;
      fromAnswer.push(r.at - at.answeredAt);
      fromRequest.push(r.at - at.sentAt);
    }
  }
  const stats = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const q = (p) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] * 10) / 10;
    return { p50: q(0.5), p99: q(0.99), max: q(1) };
  };
  return {
    streams: STREAMS,
    messages: MESSAGES,
    deliveries: fromAnswer.length,
    fromAnswer: stats(fromAnswer),
    fromRequest: stats(fromRequest),
    pass: complete,
  };
}

function openStream(url, path, key) {
  return new Promise((resolve, reject) => {
    const received = [];
    const req = http.get(url + path, { agent: false, headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } }, (res) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        const at = performance.now();
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.split('\n').find((line) => line.startsWith('data: '));
          if (data) received.push({ messageId: JSON.parse(data.slice(6)).data.messageId, at });
        }
      });
      res.on('error', () => undefined);
      resolve({ status: res.statusCode, received, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

function markdown(engines) {
  const lines = [
    `## Event streams: commit to client (${STREAMS} streams of one session, ${MESSAGES} messages added one at a time)`,
    '',
    '| Engine | Deliveries | from the answer p50 / p99 / max ms | from the request p50 / p99 / max ms | |',
    '|---|---:|---:|---:|---|',
  ];
  for (const e of engines) {
    lines.push(
      `| ${e.engine} | ${e.deliveries} | ${e.fromAnswer.p50} / ${e.fromAnswer.p99} / ${e.fromAnswer.max} | ${e.fromRequest.p50} / ${e.fromRequest.p99} / ${e.fromRequest.max} | ${e.pass ? 'pass' : 'FAILED: a stream missed, repeated or reordered a message'} |`,
    );
  }
  lines.push(
    '',
    '"From the answer": from the add-message response (committed by then) to the stream\'s receipt; negative when the stream had it first. "From the request": from sending the request, an upper bound.',
  );
  return lines.join('\n');
}
