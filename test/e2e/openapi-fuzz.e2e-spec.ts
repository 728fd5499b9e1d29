import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { createOrganization, createServiceAccount, createUser, TestUser } from '../utils/factories';
import { answerBodyOf, OpenApiDocument } from '../utils/openapi-oracle';
import {
  encodeSafely,
  excerpt,
  Hints,
  jsonText,
  mutate,
  ODD_BODIES,
  ODD_STRINGS,
  oddId,
  Operation,
  operationsOf,
  restoring,
  SchemaSampler,
} from '../utils/openapi-fuzz';
import { json, RecordingUpstream } from '../utils/recording-upstream';
import { Dice } from '../utils/seeded-random';
import { startTestApp, TestApp } from '../utils/test-app';
import { errorBodyProblem } from '../utils/v0-errors';

/**
 * Every operation of the OpenAPI document, sent requests generated from its own schemas with a seeded generator:
 * valid ones, and ones broken the ways hostile clients break them (wrong types, missing and unknown keys, huge,
 * long and deep values, NUL and lone surrogates, odd numbers, garbage ids, every kind of credential). Each answer
 * must come within STALL_MS (plus any wait the request asked for), be no 5xx the operation does not document, be
 * the path's error body when an error, and be one the document describes (test/utils/openapi-oracle.ts).
 * FUZZ_CASES (total), FUZZ_SEED and FUZZ_ONLY (`post /api/v0/sessions`) size and replay a run: docs/testing.md.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed0a91);
const CASES = Number(process.env.FUZZ_CASES ?? 1_500);
const ONLY = process.env.FUZZ_ONLY?.replace(/^\w+/, (method) => method.toLowerCase());
/** Generous for a shared machine: the point is catching requests that stall the server for seconds. */
const STALL_MS = 5_000;
const CONTROLS = '/api/v0/organization/enterprise-controls';
const COMPUTERS = '/api/v0/computers';
const WEBHOOKS = '/api/v0/organization/webhooks';

type Json = Record<string, unknown>;
interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  credential: string;
  how: string[];
}
interface Finding {
  key: string;
  why: string;
  request: Sent;
  answer: unknown;
  caseNumber: number;
  count: number;
}

/** A seed of its own per operation: FUZZ_ONLY replays an operation's requests without running the others. */
const seedOf = (key: string) => [...key].reduce((hash, c) => Math.imul(hash ^ c.charCodeAt(0), 16777619) >>> 0, SEED >>> 0);

describe('OpenAPI fuzz: every operation, requests generated from the document', () => {
  let t: TestApp;
  let document: OpenApiDocument;
  const vendor = new RecordingUpstream((request, res) => {
    if (request.path.endsWith('/chat/completions'))
      return json(res, 200, {
        id: 'c1',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      });
    if (request.path.startsWith('/mcp')) return json(res, 200, { jsonrpc: '2.0', id: 1, result: {} });
    return json(res, 200, { ok: true });
  });
  const pools: Record<string, unknown[]> = {};
  const credentials: Array<[string, Record<string, string>]> = [];
  /** Ids the fuzz's own credentials stand on: never offered as a path id (revoking them would end the run). */
  const protectedIds = new Set<string>();
  let owner: TestUser;
  let originalControls: Json;
  let ownComputer: string;
  let runningSession: string;
  /** A query parameter is named `?name`: its own values first (`?type` is an event type, a body's `type` is not). */
  const hints: Hints = (name) => [pools[name], pools[name.replace(/^\?/, '')]].find((pool) => pool?.length);
  const add = (name: string, ...values: unknown[]) => (pools[name] ??= []).push(...values);

  beforeAll(async () => {
    await vendor.start();
    const loopback = `127.0.0.1:${vendor.port}`;
    // Nothing leaves the machine: deliveries and provisioning are off, and the relays reach only the local vendor.
    t = await startTestApp({
      MODEL_RELAY_ALLOWED_HOSTS: loopback,
      MCP_RELAY_ALLOWED_HOSTS: loopback,
      WEBHOOK_ALLOWED_HOSTS: loopback,
      MODEL_RELAY_TIMEOUT_MS: '2000',
      WEBHOOK_CONCURRENCY: '0',
      PROVISIONING_CONCURRENCY: '0',
      CONTROLS_CACHE_MS: '0',
    });
    document = t.oracle().document;
    const http = () => t.http();
    // With message history, so the message lists answer (it is off by default).
    const orgA = await createOrganization(t, { messageHistory: true });
    owner = await createUser(t, Role.Owner, orgA);
    const users = { owner, manager: await createUser(t, Role.Manager, orgA), member: await createUser(t, Role.Member, orgA) };
    const guest = await createUser(t, Role.Guest, orgA);
    const otherOwner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    for (const [name, user] of Object.entries({ ...users, guest, otherOwner })) {
      credentials.push([name, user.auth]);
      protectedIds.add(user.userId).add(user.apiKeyId);
    }
    const victim = await createUser(t, Role.Member, orgA);
    const serviceAccount = await createServiceAccount(t, orgA);
    const revoked = await createUser(t, Role.Member, orgA);
    await http().delete(`/settings/api-keys/${revoked.apiKeyId}`).set(revoked.auth).expect(200);

    const relays = {
      customModels: [{ id: 'm', model: 'vendor-x', baseUrl: `http://${loopback}/v1`, apiKey: 'sk-fuzz-0123456789' }],
      mcpServers: [
        { name: 'remote', transport: 'http', url: `http://${loopback}/mcp` },
        { name: 'local', transport: 'stdio', command: 'node', args: ['server.js'] },
      ],
    };
    add('url', `http://${loopback}/hook`);
    add('baseUrl', `http://${loopback}/v1`);
    await http().patch(CONTROLS).set(owner.auth).send({ settings: relays }).expect(200);
    // As answered (secrets masked), with the relays as sent: a mask restores a secret only while its model is there.
    originalControls = { ...((await http().get(CONTROLS).set(owner.auth).expect(200)).body.settings as Json), ...relays };
    for (const [user, auth] of [
      [owner, owner.auth],
      [otherOwner, otherOwner.auth],
    ] as const) {
      const webhook = await http()
        .post(WEBHOOKS)
        .set(auth)
        .send({ url: `http://${loopback}/hook` })
        .expect(201);
      const computer = await http().post(COMPUTERS).set(auth).send({ name: 'fuzz', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' }).expect(201);
      const session = await http().post('/api/v0/sessions').set(auth).send({ title: 'fuzz' }).expect(201);
      add('webhookId', webhook.body.id);
      add('computerId', computer.body.id);
      add('sessionId', session.body.sessionId);
      if (user === owner) {
        ownComputer = computer.body.id as string;
        credentials.push(['agent', { Authorization: `Bearer ${computer.body.agentToken as string}` }]);
      }
    }
    await runningTurn();
    const deliveries = await http()
      .get(`${WEBHOOKS}/${String(pools.webhookId[0])}/deliveries`)
      .set(owner.auth)
      .expect(200);
    add('deliveryId', ...(deliveries.body.deliveries as Json[]).slice(0, 2).map((d) => d.id));
    add('apiKeyId', victim.apiKeyId, otherOwner.apiKeyId);
    add('userId', victim.userId, serviceAccount.userId, otherOwner.userId);
    add('serviceAccountId', serviceAccount.userId);
    add('?actorUserId', owner.userId);
    add('customModelId', 'm');
    add('serverName', 'remote', 'local');
    add('revision', 1, 2);
    add('waitMs', 0, 50, 200);
    add('?limit', '1', '5', '100');
    add('?after', '0', '1');
    add('?types', ...Object.keys(eventMapping()));
    add('?type', ...Object.keys(eventMapping()));
    add('?since', '2026-01-01T00:00:00Z', '0');
    add('?until', '2030-01-01T00:00:00Z', '4102444800000');
    add('expiresAt', '2030-01-01T00:00:00.000Z');
    add('remoteUser', 'dev');
    add('commitHash', 'd670460b4b4aece5915caf5c68d12f560a9fe3e4');
    add('numerator', 0, 1);
    add('denominator', 1, 10);
    credentials.push(
      ['none', {}],
      ['revoked', revoked.auth],
      ['garbage', { Authorization: 'Bearer apk_not-a-key' }],
      ['garbage', { Authorization: 'Bearer cpt_not-a-token' }],
      ['garbage', { Authorization: 'Basic dXNlcjpwYXNz' }],
      ['garbage', { Authorization: 'Bearer' }],
      ['garbage', { Authorization: `bearer ${owner.key}x` }],
      ['garbage', { Authorization: `Bearer ${'a'.repeat(4_000)}` }],
    );
  });

  afterAll(async () => {
    await t?.close();
    await vendor.stop();
  });

  const eventMapping = () => (document.components!.schemas as Record<string, { discriminator: { mapping: Json } }>).Event.discriminator.mapping;

  /** A turn the agent is running now (the last may have been ended or interrupted), with a tool approval asked in it. */
  async function runningTurn(): Promise<void> {
    const agent = Object.fromEntries(credentials)['agent'];
    const session = await t.http().post('/api/v0/sessions').set(owner.auth).send({ title: 'running', computerId: ownComputer }).expect(201);
    await t
      .http()
      .post(`/api/v0/sessions/${session.body.sessionId as string}/messages`)
      .set(owner.auth)
      .send({ text: 'go' })
      .expect(200);
    const work = (await t.http().post('/api/v0/agent/claims').set(agent).send({}).expect(200)).body.work as Json;
    const path = `/api/v0/agent/sessions/${work.sessionId as string}/tool-approvals`;
    const approval = await t.http().post(path).set(agent).send({ turnId: work.turnId, toolName: 'Execute', summary: 'make' }).expect(201);
    add('sessionId', work.sessionId);
    runningSession = work.sessionId as string;
    pools.turnId = [work.turnId];
    add('approvalId', (approval.body.toolApproval as Json).approvalId);
  }

  function generate(op: Operation, dice: Dice, sampler: SchemaSampler): Sent {
    const how: string[] = [];
    const path = op.template.replace(/\{(\w+)\}/g, (_, name: string) => {
      // The agent's calls name the session of its turn, or the turn is not theirs to touch.
      const real = name === 'sessionId' && op.template.startsWith('/api/v0/agent/') ? [runningSession] : hints(name);
      if (real && dice.chance(0.75)) return encodeURIComponent(String(dice.pick(real)));
      how.push(`odd ${name}`);
      return oddId(dice);
    });
    const query: string[] = [];
    const headers: Record<string, string> = {};
    for (const parameter of op.parameters) {
      // A cursor is only valid as a list gave it: mostly left out.
      if (parameter.in === 'path' || !dice.chance(parameter.required ? 0.95 : parameter.name === 'cursor' ? 0.1 : 0.5)) continue;
      let value = String(sampler.valid(parameter.schema, parameter.in === 'query' ? `?${parameter.name}` : parameter.name));
      if (dice.chance(0.15)) {
        value = dice.pick([...ODD_STRINGS, '-1', '1e308', '0.5', 'abc', 'x'.repeat(3_000), 'true', '[]']);
        how.push(`odd ${parameter.name}`);
      }
      if (parameter.in === 'query') query.push(`${encodeURIComponent(parameter.name)}=${encodeSafely(value)}`);
      else if (parameter.in === 'header' && /^[\x20-\x7e]*$/.test(value)) headers[parameter.name] = value;
    }
    if (dice.chance(0.05)) query.push(dice.pick(['zzz=1', 'limit=1&limit=2', '%zz=1', 'a%00=1', '__proto__=1', `${'k'.repeat(300)}=1`]));
    const [credential, auth] = dice.weighted([
      [5, () => dice.pick(credentials.filter(([name]) => ['owner', 'manager', 'member', 'guest'].includes(name)))],
      // Agent tokens mostly where they are taken: the agent channel.
      [op.template.startsWith('/api/v0/agent/') ? 4 : 0.5, () => credentials.find(([name]) => name === 'agent')!],
      [1, () => credentials.find(([name]) => name === 'otherOwner')!],
      [2, () => dice.pick(credentials.filter(([name]) => ['none', 'revoked', 'garbage'].includes(name)))],
    ] as const)();
    const sent: Sent = { method: op.method, url: `${path}${query.length > 0 ? `?${query.join('&')}` : ''}`, headers: { ...headers, ...auth }, credential, how };
    if (op.body === undefined) {
      if (dice.chance(0.05)) {
        const [type, body] = dice.pick([
          ['application/json', '{"x":1}'],
          ['text/plain', 'x'],
          ['application/json', `{"x":"${'x'.repeat(1_100_000)}"}`],
        ]);
        Object.assign(sent, { body, headers: { ...sent.headers, 'content-type': type } });
        how.push(`a body where none is taken (${type}, ${body.length} bytes)`);
      }
      return sent;
    }
    // The document's "Try it out" body where there is one (never one naming a host), as valid as a body gets.
    const example = (document.paths[op.template][op.method] as { requestBody: { content: Record<string, { example?: unknown }> } }).requestBody.content[
      'application/json'
    ].example;
    let value =
      op.key === `patch ${CONTROLS}`
        ? { settings: someSettings(dice, sampler) }
        : example !== undefined && !JSON.stringify(example).includes('://') && dice.chance(0.3)
          ? withRealIds(example as Json, dice)
          : sampler.valid(op.body);
    let text: string | Buffer | undefined;
    if (dice.chance(0.4)) {
      const mutation = mutate(value, dice);
      value = mutation.value;
      how.push(mutation.how);
    }
    if (dice.chance(0.05)) {
      text = dice.pick(ODD_BODIES);
      how.push(`body ${JSON.stringify(excerpt(text, 20))}`);
    } else if (value !== undefined) text = jsonText(value);
    const type = dice.weighted([
      [40, 'application/json'],
      [2, op.method === 'patch' ? 'application/merge-patch+json' : 'application/json; charset=utf-8'],
      [1, 'text/plain'],
      [1, 'application/x-www-form-urlencoded'],
      [1, 'application/json; charset=utf-16'],
      [1, 'invalid utf-8'],
    ] as const);
    if (type === 'invalid utf-8') text = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
    if (type !== 'application/json') how.push(type);
    if (text !== undefined)
      Object.assign(sent, { body: text, headers: { ...sent.headers, 'content-type': type === 'invalid utf-8' ? 'application/json' : type } });
    return sent;
  }

  /** The example with the seeded objects' ids where its keys name one (its turnId is no turn of ours). */
  function withRealIds(example: Json, dice: Dice): Json {
    return Object.fromEntries(Object.entries(example).map(([key, value]) => [key, hints(key) ? dice.pick(hints(key)!) : value]));
  }

  /** A merge patch of one to three settings, each drawn from the published settings schema. */
  function someSettings(dice: Dice, sampler: SchemaSampler): unknown {
    const properties = (sampler.resolve({ $ref: '#/components/schemas/EnterpriseSettings' }).properties ?? {}) as Json;
    const names = Array.from({ length: dice.int(1, 3) }, () => dice.pick(Object.keys(properties)));
    return sampler.valid({ type: 'object', required: names, properties: Object.fromEntries(names.map((name) => [name, properties[name]])) });
  }

  async function send(request: Sent): Promise<Response> {
    const http = t.http().unchecked('the fuzz asks the oracle itself, to report every finding with its seed');
    const test = http[request.method as 'get'](request.url).set(request.headers);
    return request.body === undefined ? await test : await test.send(request.body);
  }

  /** What is wrong with an answer, as [kind, why]; nothing when it is one the document describes. */
  function judge(op: Operation, request: Sent, res: Response, ms: number): Array<[string, string]> {
    const problems: Array<[string, string]> = [];
    const waited = Number(/waitMs=(\d+)/.exec(request.url)?.[1] ?? /"waitMs":(\d+)/.exec(String(request.body))?.[1] ?? 0);
    if (ms > STALL_MS + Math.min(waited, 30_000)) problems.push(['stall', `answered after ${Math.round(ms)} ms`]);
    if (res.status >= 500 && (res.status === 500 || !op.statuses.includes(String(res.status)))) problems.push(['5xx', `answered ${res.status}`]);
    if (res.status >= 400) {
      const shape = errorBodyProblem(request.url.split('?')[0], res.status, res);
      if (shape) problems.push(['error body', shape]);
    }
    try {
      t.oracle().checkResponse(request.method, request.url, res.status, res.headers, answerBodyOf(res));
    } catch (error) {
      problems.push(['contract', (error as Error).message.split('\n  request:')[0].replace(/^OpenAPI oracle: /, '')]);
    }
    return problems;
  }

  /** What a successful answer changes for the cases after it: new ids to use, a new agent token, controls to restore. */
  async function learn(op: Operation, request: Sent, res: Response): Promise<void> {
    if (res.status >= 300 || res.body === null || typeof res.body !== 'object') return;
    const body = res.body as Json;
    const created = { [`post ${COMPUTERS}`]: 'computerId', [`post ${WEBHOOKS}`]: 'webhookId' }[op.key];
    for (const name of ['sessionId', 'computerId', 'webhookId', 'repoId', 'approvalId', 'apiKeyId', 'userId']) {
      const id = name === created ? body.id : body[name];
      if (typeof id === 'string' && !protectedIds.has(id) && (pools[name]?.length ?? 0) < 8 && !pools[name]?.includes(id)) add(name, id);
    }
    if (typeof body.agentToken === 'string' && body.computerId === ownComputer)
      credentials.splice(
        credentials.findIndex(([name]) => name === 'agent'),
        1,
        ['agent', { Authorization: `Bearer ${body.agentToken}` }],
      );
    if (op.key === `patch ${CONTROLS}` && request.credential !== 'otherOwner') {
      const current = (await t.http().get(CONTROLS).set(owner.auth).expect(200)).body.settings as Json;
      await t
        .http()
        .patch(CONTROLS)
        .set(owner.auth)
        .send({ settings: restoring(current, originalControls) })
        .expect((res) => expect({ restored: res.status, body: res.body as unknown }).toMatchObject({ restored: 200 }));
    }
  }

  it(
    'answers every request in time, with no 5xx, in its error body, and as the document describes',
    async () => {
      const operations = operationsOf(document);
      const perOperation = Math.max(1, Math.ceil(CASES / operations.length));
      const findings = new Map<string, Finding>();
      /** Each distinct finding once, with how often it came and the first request that met it. */
      const note = (key: string, why: string, request: Sent, answer: unknown, caseNumber: number) => {
        const seen = findings.get(key);
        if (seen) seen.count++;
        else findings.set(key, { key, why, request, answer, caseNumber, count: 1 });
      };
      const statuses = new Map<number, number>();
      const answered2xx = new Set<string>();
      let sentCount = 0;
      const started = performance.now();
      const chosen = operations.filter((o) => !ONLY || o.key === ONLY);
      if (chosen.length === 0) throw new Error(`FUZZ_ONLY=${ONLY}: no such operation (write it as "post /api/v0/sessions")`);
      for (const op of chosen) {
        if (op.template.startsWith('/api/v0/agent/sessions/') || op.template.includes('tool-approvals')) await runningTurn();
        const dice = Dice.seeded(seedOf(op.key));
        const sampler = new SchemaSampler(document, dice, hints);
        for (let i = 1; i <= perOperation; i++) {
          const request = generate(op, dice, sampler);
          const before = performance.now();
          let res: Response;
          try {
            res = await send(request);
          } catch (error) {
            note(`${op.key} no answer`, (error as Error).message, request, undefined, i);
            continue;
          }
          sentCount++;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status < 300) answered2xx.add(op.key);
          for (const [kind, why] of judge(op, request, res, performance.now() - before)) {
            const what = kind === 'contract' ? (/does not list|promises/.test(why) ? 'status not documented' : 'body off its schema') : kind;
            note(`${op.key} → ${res.status} ${what}`, why, request, answerBodyOf(res), i);
          }
          await learn(op, request, res);
        }
      }
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      // How far the run got: operations no request succeeded on had only their refusals tried.
      const never = chosen.filter((o) => !answered2xx.has(o.key)).map((o) => o.key);
      console.info(
        `OpenAPI fuzz: seed ${SEED}, ${sentCount} requests in ${seconds} s; statuses ${JSON.stringify(Object.fromEntries(statuses))}; never a 2xx: ${never.join(', ') || 'none'}`,
      );
      const report = [...findings.values()].map(
        (f) =>
          `${f.key} (×${f.count})\n  why: ${f.why}\n  request: ${f.request.method.toUpperCase()} ${excerpt(f.request.url, 200)} as ${f.request.credential}` +
          `${f.request.how.length > 0 ? `; ${f.request.how.join('; ')}` : ''}\n  body: ${excerpt(f.request.body)}\n  answer: ${excerpt(f.answer)}\n` +
          `  replay: FUZZ_SEED=${SEED} FUZZ_CASES=${CASES} FUZZ_ONLY='${f.key.split(' → ')[0].replace(/ no answer$/, '')}' (case ${f.caseNumber} of ${perOperation})`,
      );
      expect(report).toEqual([]);
    },
    Math.max(300_000, CASES * 300),
  );
});
