// The delay from an event's commit to a stream client, with 1,000 event streams (server-sent events) open while
// 100 messages a second are added to the sessions they follow, on PostgreSQL and PGlite.
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

// 10 organizations (the per-organization cap is 200 streams), 10 API keys each (10 streams a key: the per-credential
// cap), 10 sessions each; every session is followed by 10 streams, one per key.
const ORGANIZATIONS = 10;
const KEYS_PER_ORGANIZATION = 10;
const SESSIONS_PER_ORGANIZATION = 10;
const STREAMS_PER_SESSION = 10;
const STREAMS = ORGANIZATIONS * SESSIONS_PER_ORGANIZATION * STREAMS_PER_SESSION;
const MESSAGES_PER_SECOND = 100;
const MESSAGES = 1_000;

export function selected(only) {
  return !only || only.some((part) => 'streams'.includes(part) || part.includes('stream'));
}

/**
 * Per engine: a server of its own, 10 organizations keeping message history, 1,000 streams (each its own
 * connection) over their 100 sessions, then 1,000 messages added at 100 a second, round-robin over the sessions
 * (each sent on time, whether or not the previous ones were answered). For each message and each stream of its
 * session: the time from the add-message response (the commit is done by then) to the stream's receipt of its
 * `message.added` (negative: the stream had it before the writer had its answer), and from the request's start
 * (an upper bound of commit-to-client). Pass: every stream got every message of its session, in order, once,
 * and the p99 from the answer is under 100 ms.
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
      const organizations = await seedKeys(root, serverEnv);
      log(`streams (${engine}): starting the server`);
      const server = await startNodeServer({
        name: `app-streams-${engine}`,
        script: join(root, 'dist/main.js'),
        env: serverEnv,
        logFile: join(results, `app-streams-${engine}.log`),
        healthPath: '/healthz',
      });
      try {
        engines.push({ engine, ...(await measure(server.url, organizations, (line) => log(`streams (${engine}): ${line}`))) });
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

/** Resolves to the organizations' API keys: an array of ORGANIZATIONS arrays of KEYS_PER_ORGANIZATION keys. */
async function seedKeys(root, serverEnv) {
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
    const organizations = [];
    for (let o = 0; o < ORGANIZATIONS; o++) {
      const slug = `streams-${randomBytes(3).toString('hex')}`;
      const org = await app.get(OrganizationsService).createOrganization({ slug, name: 'Streams', features: { messageHistory: true } });
      const user = await app.get(OrganizationsService).createUser(org.slug, { email: `owner@${slug}.example`, name: 'Owner', role: Role.Owner });
      const keys = [];
      for (let i = 0; i < KEYS_PER_ORGANIZATION; i++)
        keys.push((await app.get(ApiKeysService).create({ organizationId: org.id, userId: user.id, name: `bench ${i}` })).key);
      organizations.push(keys);
    }
    return organizations;
  } finally {
    await app.close();
  }
}

async function measure(url, organizations, log) {
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
  /** { id, key, streams, sent: messageId -> {sentAt, answeredAt}, order: messageIds as answered } */
  const sessions = [];
  for (const keys of organizations)
    for (let i = 0; i < SESSIONS_PER_ORGANIZATION; i++)
      sessions.push({ id: (await json('/api/v0/sessions', keys[0], { title: `streamed ${i}` })).sessionId, key: keys[0], keys, streams: [], sent: new Map() });
  for (const session of sessions)
    for (let i = 0; i < STREAMS_PER_SESSION; i++)
      session.streams.push(await openStream(url, `/api/v0/sessions/${session.id}/events?types=message.added`, session.keys[i % session.keys.length]));
  const streams = sessions.flatMap((session) => session.streams);
  log(`${streams.filter((s) => s.status === 200).length} streams open over ${sessions.length} sessions`);

  // Open loop: message i leaves at i / MESSAGES_PER_SECOND seconds, answered or not. A session's messages are
  // 100 apart (1 s at 100 a second), so each session's are answered in the order sent.
  const started = performance.now();
  const writes = [];
  for (let i = 0; i < MESSAGES; i++) {
    const due = started + (i * 1000) / MESSAGES_PER_SECOND;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const session = sessions[i % sessions.length];
    const sentAt = performance.now();
    writes.push(
      json(`/api/v0/sessions/${session.id}/messages`, session.key, { text: `message ${i}` }).then((answer) =>
        session.sent.set(answer.messageId, { sentAt, answeredAt: performance.now() }),
      ),
    );
  }
  await Promise.all(writes);
  const sendSeconds = (performance.now() - started) / 1000;
  const deadline = Date.now() + 30_000;
  while (sessions.some((session) => session.streams.some((s) => s.received.length < session.sent.size)) && Date.now() < deadline) await sleep(50);
  for (const s of streams) s.close();
  const fromAnswer = [];
  const fromRequest = [];
  let complete = true;
  for (const session of sessions) {
    const order = [...session.sent.entries()].sort(([, a], [, b]) => a.sentAt - b.sentAt).map(([id]) => id);
    for (const s of session.streams) {
      if (s.status !== 200 || s.received.map((r) => r.messageId).join() !== order.join()) complete = false;
      for (const r of s.received) {
        const at = session.sent.get(r.messageId);
        if (!at) continue;
        fromAnswer.push(r.at - at.answeredAt);
        fromRequest.push(r.at - at.sentAt);
      }
    }
  }
  const stats = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const q = (p) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] * 10) / 10;
    return { p50: q(0.5), p99: q(0.99), max: q(1) };
  };
  const answer = stats(fromAnswer);
  return {
    streams: STREAMS,
    messages: MESSAGES,
    messagesPerSecond: Math.round((MESSAGES / sendSeconds) * 10) / 10,
    deliveries: fromAnswer.length,
    fromAnswer: answer,
    fromRequest: stats(fromRequest),
    complete,
    pass: complete && answer.p99 < 100,
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
    `## Event streams: commit to client (${STREAMS} streams over ${ORGANIZATIONS * SESSIONS_PER_ORGANIZATION} sessions, ${MESSAGES} messages at ${MESSAGES_PER_SECOND} a second)`,
    '',
    '| Engine | Sent per second | Deliveries | from the answer p50 / p99 / max ms | from the request p50 / p99 / max ms | target | |',
    '|---|---:|---:|---:|---:|---|---|',
  ];
  for (const e of engines) {
    lines.push(
      `| ${e.engine} | ${e.messagesPerSecond} | ${e.deliveries} | ${e.fromAnswer.p50} / ${e.fromAnswer.p99} / ${e.fromAnswer.max} | ${e.fromRequest.p50} / ${e.fromRequest.p99} / ${e.fromRequest.max} | p99 < 100 ms | ${
        !e.complete ? 'FAILED: a stream missed, repeated or reordered a message' : e.pass ? 'pass' : 'fail'
      } |`,
    );
  }
  lines.push(
    '',
    '"From the answer": from the add-message response (committed by then) to the stream\'s receipt; negative when the stream had it first. "From the request": from sending the request, an upper bound.',
  );
  return lines.join('\n');
}
