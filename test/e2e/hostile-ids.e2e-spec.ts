import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import Ajv2020 from 'ajv/dist/2020';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { agentOf, Auth } from '../utils/fixtures/model-relay';
import { startTestApp, TestApp } from '../utils/test-app';
import { poolWithToken, registerWorker } from '../utils/workers';

type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: { format?: string; type?: string };
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<string, { content?: Record<string, { example?: { metadata?: { code?: string } } }> }>;
}
interface Route {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  path: string;
  operation: Operation;
  ids: string[];
}

const METHODS = ['get', 'post', 'patch', 'put', 'delete'] as const;
const TURN = randomUUID();
/** Valid bodies of the operations whose document shows none, so that their id is what they answer about. */
const BODIES: Record<string, object> = {
  'patch /api/v0/organization/members/{userId}': { name: 'Ada' },
  'post /api/v0/organization/members/{userId}/api-keys': { name: 'CI pipeline' },
  'post /api/v0/agent/sessions/{sessionId}/usage': { turnId: TURN, model: 'model-a' },
  'post /api/v0/agent/sessions/{sessionId}/heartbeat': { turnId: TURN },
  'post /api/v0/agent/sessions/{sessionId}/deltas': { turnId: TURN, step: 0, text: 'Hello' },
  'post /api/v0/sessions/{sessionId}/tool-approvals/{approvalId}': { decision: 'allow' },
};
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);

/** Ids as they are written in a path: percent-escaped where they must be. */
const UNSTORABLE = [
  ['a NUL byte', '%00'],
  ['a well-formed id and a NUL byte', `${randomUUID()}%00`],
] as const;
/** Text that is not UTF-8 cannot be decoded into an id: the URL itself is malformed. */
const UNDECODABLE = [
  ['a lone surrogate (invalid UTF-8)', '%ED%A0%80'],
  ['a bad percent-escape', '%zz'],
] as const;
/** Ids that decode to text PostgreSQL can store, but no row has. */
const STRANGE = [
  ['odd but valid UTF-8 (bidi override, emoji, quotes, space)', '%E2%80%AE%F0%9F%98%80%22%27%3B--%20x'],
  ['8,000 characters', 'a'.repeat(8000)],
] as const;

/**
 * Ids no row can have, in the path of every operation that takes one, enumerated from the published document so that a
 * new route is covered as soon as it exists; sent by a caller who may call the route and by a guest. Each answer is
 * one the operation documents, in its documented body: the route's own 404 for an id that names nothing, never a 500
 * (a NUL byte reached PostgreSQL, which refuses it) nor a 414 (the router's limit of 100 characters for a parameter).
 */
describe('Hostile ids, query values and headers', () => {
  let t: TestApp;
  let owner: TestUser;
  let guest: TestUser;
  let agent: Auth;
  let worker: Auth;
  let sessionId: string;
  let doc: { paths: Record<string, Record<string, Operation>> };
  /** Every operation, and those with an id in their path. */
  let operations: Route[];
  let routes: Route[];
  const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });

  beforeAll(async () => {
    t = await startTestApp();
    // Message history on, so that reading a session's messages answers what its id names, not that the feature is off.
    const organization = await createOrganization(t, { messageHistory: true });
    owner = await createUser(t, Role.Owner, organization);
    guest = await createUser(t, Role.Guest, organization);
    agent = await agentOf(t, owner);
    worker = await workerOf(owner);
    sessionId = (await t.http().post('/api/v0/sessions').set(owner.auth).send({}).expect(201)).body.sessionId as string;
    doc = (await t.http().get('/docs-json')).body;
    ajv.addSchema({ ...structuredClone(doc), $id: 'openapi' } as Json);
    operations = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of METHODS) {
        const operation = item[method];
        if (operation) operations.push({ method, path, operation, ids: [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]) });
      }
    }
    routes = operations.filter((route) => route.ids.length > 0);
  });

  afterAll(() => t.close());

  const code404 = (operation: Operation) => operation.responses['404']?.content?.['application/json']?.example?.metadata?.code;

  /**
   * The code the API answers for an unknown id in the route's first path parameter (the one a route looks up first): the
   * route's own documented 404 when it has one parameter, else that of the operations whose path ends with that parameter.
   */
  function unknownIdCode(route: Route): string | undefined {
    if (route.ids.length === 1) return code404(route.operation);
    const owners = routes.filter((other) => other.path.endsWith(`/{${route.ids[0]}}`));
    return owners.map((other) => code404(other.operation)).find(Boolean);
  }

  /** A worker of a pool of the owner's organization, by its session token. */
  async function workerOf(user: TestUser): Promise<Auth> {
    const { session } = await registerWorker(t, (await poolWithToken(t, user)).token);
    return { Authorization: `Bearer ${session}` };
  }

  const onWorkerChannel = (route: Route) => route.path.startsWith('/api/v0/worker/');

  /**
   * Agent-only operations (their 403 is agent_token_required) are called with the owner's computer's agent token, the
   * worker channel's with a worker's session token.
   */
  const callerOf = (route: Route): Auth =>
    onWorkerChannel(route)
      ? worker
      : route.operation.responses['403']?.content?.['application/json']?.example?.metadata?.code === 'agent_token_required'
        ? agent
        : owner.auth;

  /** The route with every id replaced by `id`, its required query parameters given well-formed values. */
  function send(route: Route, id: string, auth: Auth, query: Record<string, string> = {}) {
    const params = new URLSearchParams(query);
    for (const parameter of route.operation.parameters ?? []) {
      if (parameter.in !== 'query' || !parameter.required || params.has(parameter.name)) continue;
      params.set(parameter.name, parameter.schema?.format === 'uuid' ? randomUUID() : /Date$/.test(parameter.name) ? day(3) : 'x');
    }
    const url = `${route.path.replace(/\{\w+\}/g, id)}${params.size > 0 ? `?${params.toString()}` : ''}`;
    const request = t.http()[route.method](url).set(auth);
    const body = BODIES[`${route.method} ${route.path}`] ?? route.operation.requestBody?.content['application/json']?.example;
    return route.operation.requestBody ? request.send((body ?? {}) as object) : request;
  }

  /** What is wrong with an answer: a status the operation does not document, or a body that is not its documented one. */
  function problemsOf(route: Route, res: Response, allowed: Record<number, string | undefined>): string[] {
    const where = `${route.method} ${route.path} → ${res.status} ${String(res.body?.metadata?.code ?? res.body?.detail ?? '')}`;
    if (!(res.status in allowed)) return [where];
    if (!route.operation.responses[String(res.status)]) return [`${where}: status not documented`];
    const code = allowed[res.status];
    if (code !== undefined && res.body?.metadata?.code !== code) return [`${where}: expected ${code}`];
    const pointer = `openapi#/paths/${route.path.replace(/~/g, '~0').replace(/\//g, '~1')}/${route.method}/responses/${res.status}/content/application~1json/schema`;
    const validate = ajv.getSchema(pointer) ?? ajv.compile({ $ref: pointer });
    if (!validate(res.body)) return [`${where}: ${ajv.errorsText(validate.errors)}`];
    // v0 and the web application's: metadata, no requestId; analytics: requestId, no metadata; readiness: both.
    const flavour = route.path.startsWith('/api/v1/') ? ['requestId'] : route.path.startsWith('/api/organization/') ? ['metadata', 'requestId'] : ['metadata'];
    const keys = Object.keys(res.body as Json).sort();
    if (JSON.stringify(keys) !== JSON.stringify(['detail', 'status', 'title', ...flavour].sort())) return [`${where}: body keys ${keys.join(', ')}`];
    return flavour.includes('requestId') && res.body.requestId !== res.headers['x-request-id'] ? [`${where}: requestId ${res.body.requestId}`] : [];
  }

  it('finds every operation with an id in its path, each documenting the 404 of an unknown id', () => {
    expect(routes.length).toBeGreaterThanOrEqual(39);
    expect(routes.filter((route) => !unknownIdCode(route)).map((route) => `${route.method} ${route.path}`)).toEqual([]);
  });

  // NUL is answered by PathIdGuard before anything reads it; the others reach the route, which finds no such row.
  it.each([...UNSTORABLE, ...STRANGE])("an id of %s answers the route's own 404, to a caller of the route and to a guest", async (_, id) => {
    const problems: string[] = [];
    for (const route of routes) {
      const code = unknownIdCode(route);
      problems.push(...problemsOf(route, await send(route, id, callerOf(route)), { 404: code }));
      // A person's credential on the worker channel is no worker's session.
      const refused = onWorkerChannel(route) ? { 401: 'invalid_worker_token' } : { 403: undefined };
      problems.push(...problemsOf(route, await send(route, id, guest.auth), { ...refused, 404: code }));
    }
    expect(problems).toEqual([]);
  });

  it.each(UNDECODABLE)('an id of %s answers 400 malformed_url, which every operation documents', async (_, id) => {
    const problems: string[] = [];
    for (const route of routes) {
      for (const auth of [callerOf(route), guest.auth]) problems.push(...problemsOf(route, await send(route, id, auth), { 400: 'malformed_url' }));
    }
    expect(problems).toEqual([]);
  });

  it('a NUL byte in any query parameter of any operation is a 400 naming that parameter', async () => {
    const problems: string[] = [];
    let checked = 0;
    for (const route of operations) {
      for (const parameter of (route.operation.parameters ?? []).filter((p) => p.in === 'query')) {
        const res = await send(route, randomUUID(), callerOf(route), { [parameter.name]: 'a\u0000b' });
        checked++;
        const named =
          res.body?.metadata?.errors?.some((error: { field: string }) => error.field === parameter.name) ??
          String(res.body?.detail).startsWith(`${parameter.name}:`);
        problems.push(
          ...problemsOf(route, res, { 400: undefined }),
          ...(named ? [] : [`${route.method} ${route.path} ?${parameter.name}: not named in ${res.text}`]),
        );
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(40);
  });

  it('a header value no header may hold is refused by the HTTP parser; a non-ASCII one is a 400 where the header is read', async () => {
    const headed = operations.flatMap((route) => (route.operation.parameters ?? []).filter((p) => p.in === 'header').map((p) => ({ route, header: p.name })));
    expect(headed.map(({ header }) => header)).toEqual(expect.arrayContaining(['Idempotency-Key', 'If-Match', 'Last-Event-ID']));
    const problems: string[] = [];
    for (const { route, header } of headed) {
      // Last-Event-ID is read by streams, of a session one may read.
      const request = send(route, sessionId, callerOf(route)).set(header, 'caf\u00e9');
      const res = await (header === 'Last-Event-ID' ? request.set('accept', 'text/event-stream') : request);
      problems.push(...problemsOf(route, res, { 400: undefined }).map((problem) => `${header}: ${problem}`));
    }
    expect(problems).toEqual([]);
    for (const header of ['Idempotency-Key', 'If-Match', 'Last-Event-ID'])
      expect(
        await rawAnswer(`POST /api/v0/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${owner.key}\r\n${header}: a\u0000b\r\nContent-Length: 0\r\n\r\n`),
      ).toMatch(/^HTTP\/1\.1 400[^]*"code":"malformed_request"/);
  });

  /** What the server answers to bytes written on a connection of their own. */
  async function rawAnswer(request: string): Promise<string> {
    const { port } = new URL(await t.app.getUrl());
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    await new Promise((resolve) => socket.once('close', resolve).once('error', resolve).write(request, 'latin1'));
    return answer;
  }
});
