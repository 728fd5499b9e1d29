import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { SignJWT } from 'jose';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { json, RecordingUpstream } from '../utils/recording-upstream';
import { createTestDatabase } from '../utils/test-database';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectInvalid, expectV0Error } from '../utils/v0-errors';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are read loosely
type Json = Record<string, any>;
type Auth = { Authorization: string };

const JWT_SECRET = 'a-test-secret-that-is-long-enough-for-hs256!';
const KEY = 'sk-relay-secret-key-0123456789';
const HEADER_SECRET = 'hdr-vendor-secret-abcdef';
const CLOUD_SECRET = 'cloud-refresh-secret-zyxwvu';

/**
 * The model relay, tried from the member's side: who may call it, where it may be made to go, what
 * crosses it each way, and whether a stored key can be read back or sent somewhere new. Real local
 * servers stand in for vendors and record what reaches them.
 */
describe('Model relay (e2e)', () => {
  let t: TestApp;
  /** The vendor: allowed by name (`localhost:<its port>`). */
  const vendor = new RecordingUpstream();
  /** Something on the server's network that nothing may reach. */
  const bystander = new RecordingUpstream();
  let owner: TestUser;
  let member: TestUser;
  let guest: TestUser;
  let agent: Auth;

  const vendorUrl = () => `http://localhost:${vendor.port}/v1`;

  beforeAll(async () => {
    await Promise.all([vendor.start(), bystander.start()]);
    t = await startTestApp({
      MODEL_RELAY_ALLOWED_HOSTS: `localhost:${vendor.port}`,
      MODEL_RELAY_TIMEOUT_MS: '1500',
      MODEL_RELAY_MAX_RESPONSE_BYTES: '65536',
      MODEL_RELAY_CONCURRENCY_PER_COMPUTER: '2',
      CONTROLS_CACHE_MS: '0',
      JWT_SECRET,
    });
    owner = await createUser(t, Role.Owner);
    const org = { id: owner.organizationId, slug: owner.organizationSlug };
    member = await createUser(t, Role.Member, org);
    guest = await createUser(t, Role.Guest, org);
    agent = await agentOf(t, owner);
  });

  afterAll(async () => {
    await t?.close();
    await Promise.all([vendor.stop(), bystander.stop()]);
  });

  beforeEach(() => {
    vendor.requests.length = 0;
    vendor.script((_, res) => json(res, 200, { id: 'c1', choices: [{ message: { role: 'assistant', content: 'hi' } }] }));
  });

  afterEach(() => expect(bystander.requests).toEqual([]));

  const setModels = (models: Json[], app = t, by = owner) =>
    app
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(by.auth)
      .send({ settings: { customModels: models } });
  const relay = (auth: Auth, body: Json = { messages: [{ role: 'user', content: 'hi' }] }, id = 'm', app = t) =>
    app.http().post(`/api/v0/agent/models/${id}/chat/completions`).set(auth).send(body);
  const model = (extra: Json = {}) => ({ id: 'm', model: 'vendor-x', baseUrl: vendorUrl(), apiKey: KEY, ...extra });

  it("answers only a computer's agent token: user API keys of every role and JWTs get 403, and nothing is sent", async () => {
    await setModels([model()]).expect(200);
    const jwt = await new SignJWT({ org_id: owner.organizationId })
      .setSubject(owner.userId)
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(JWT_SECRET));
    for (const auth of [owner.auth, member.auth, guest.auth, { Authorization: `Bearer ${jwt}` }]) {
      expectV0Error(await relay(auth), 403, 'agent_token_required');
    }
    expect(vendor.requests).toEqual([]);
    expect((await relay(agent).expect(200)).body.choices[0].message.content).toBe('hi');
    expect(vendor.requests).toHaveLength(1);

    // Another organization's agent sees no model of this organization's.
    const stranger = await createUser(t, Role.Owner);
    expectV0Error(await relay(await agentOf(t, stranger)), 404, 'custom_model_not_found');
  });

  it('refuses every non-public address, in every spelling, before connecting', async () => {
    const B = bystander.port;
    const refused = [
      `http://127.0.0.1:${B}/v1`,
      `http://2130706433:${B}/v1`,
      `http://0x7f.1:${B}/v1`,
      `http://0x7f000001:${B}/v1`,
      `http://017700000001:${B}/v1`,
      `http://127.1:${B}/v1`,
      `http://[::1]:${B}/v1`,
      `http://[::ffff:127.0.0.1]:${B}/v1`,
      `http://[::ffff:7f00:1]:${B}/v1`,
      `http://[64:ff9b::7f00:1]:${B}/v1`,
      `http://localhost:${B}/v1`,
      `http://0.0.0.0:${B}/v1`,
      `http://[::]:${B}/v1`,
      'http://10.0.0.1/v1',
      'http://172.16.5.4/v1',
      'http://192.168.0.1/v1',
      'http://100.64.0.1/v1',
      'http://169.254.169.254/latest/meta-data',
      'http://metadata.google.internal/computeMetadata/v1',
      'http://[fe80::1]/v1',
      'http://[fc00::1]/v1',
      'http://[fd00:ec2::254]/v1',
      'http://224.0.0.1/v1',
      'http://[ff02::1]/v1',
      'http://[2002:7f00:1::]/v1',
      // The vendor's own port, but not by the name the operator allowed.
      `http://127.0.0.1:${vendor.port}/v1`,
    ];
    for (const baseUrl of refused) {
      await setModels([model({ baseUrl })]).expect(200);
      const res = await relay(agent);
      expectV0Error(res, 403, 'model_address_refused');
      expect(res.body.detail).toMatch(/refused by the relay's address policy/);
    }
    expect(vendor.requests).toEqual([]);
  });

  it('admits exactly what the operator names, never this server, and never what BASE_URL names', async () => {
    const internal = await new RecordingUpstream().start();
    const decoy = await new RecordingUpstream().start();
    const t2 = await startTestApp({ MODEL_RELAY_ALLOWED_HOSTS: '127.0.0.1', BASE_URL: `http://127.0.0.1:${decoy.port}`, CONTROLS_CACHE_MS: '0' });
    try {
      const admin = await createUser(t2, Role.Owner);
      const token = await agentOf(t2, admin);
      await setModels([model({ baseUrl: `http://127.0.0.1:${internal.port}/v1` })], t2, admin).expect(200);
      await relay(token, undefined, 'm', t2).expect(200);
      expect(internal.requests.map((r) => r.path)).toEqual(['/v1/chat/completions']);

      const self = new URL(await t2.app.getUrl()).port;
      for (const baseUrl of [`http://127.0.0.1:${self}/api/v0`, `http://127.0.0.1:${decoy.port}/api/v0`]) {
        await setModels([model({ baseUrl })], t2, admin).expect(200);
        const res = await relay(token, undefined, 'm', t2);
        expectV0Error(res, 403, 'model_address_refused');
        expect(res.body.detail).toMatch(/is this server/);
      }
      expect(decoy.requests).toEqual([]);
    } finally {
      await t2.close();
      await Promise.all([internal.stop(), decoy.stop()]);
    }
  });

  it('sends only the request it builds, and passes back the status, the JSON and a fixed set of headers', async () => {
    await setModels([model({ baseUrl: `${vendorUrl()}?api-version=2024`, extraHeaders: { 'X-Vendor-Key': HEADER_SECRET } })]).expect(200);
    vendor.script((_, res) =>
      json(
        res,
        429,
        { error: { message: 'slow down' } },
        { 'retry-after': '7', 'set-cookie': 'session=1', 'x-internal-secret': 'topology', 'x-ratelimit-remaining-requests': '0', server: 'nginx/1.2' },
      ),
    );
    const res = await t
      .http()
      .post('/api/v0/agent/models/m/chat/completions')
      .set(agent)
      .set({ Cookie: 'sid=caller', 'X-Forwarded-For': '203.0.113.9', 'X-Caller': 'evil', 'Proxy-Authorization': 'Basic x' })
      .send({ model: 'something-else', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ error: { message: 'slow down' } });
    expect(res.headers).toMatchObject({ 'retry-after': '7', 'x-ratelimit-remaining-requests': '0' });
    for (const leaked of ['set-cookie', 'x-internal-secret', 'server']) expect(res.headers[leaked]).toBeUndefined();

    const [sent] = vendor.requests;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/chat/completions?api-version=2024');
    expect(sent.headers).toMatchObject({ authorization: `Bearer ${KEY}`, 'x-vendor-key': HEADER_SECRET, 'content-type': 'application/json' });
    expect(Object.keys(sent.headers).sort()).toEqual([
      'accept',
      'authorization',
      'connection',
      'content-length',
      'content-type',
      'host',
      'user-agent',
      'x-vendor-key',
    ]);
    expect(JSON.parse(sent.body)).toMatchObject({ model: 'vendor-x', messages: [{ role: 'user', content: 'hi' }] });
  });

  it('does not follow redirects, and refuses answers that are not JSON, too large or too late', async () => {
    await setModels([model()]).expect(200);
    vendor.script((_, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${bystander.port}/steal` });
      res.end();
    });
    expectV0Error(await relay(agent), 502, 'model_redirected');

    vendor.script((_, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>internal admin page</html>');
    });
    const html = await relay(agent);
    expectV0Error(html, 502, 'model_answer_invalid');
    expect(JSON.stringify(html.body)).not.toContain('internal admin');

    vendor.script((_, res) => json(res, 200, { padding: 'x'.repeat(100_000) }));
    expectV0Error(await relay(agent), 502, 'model_answer_invalid');

    vendor.script(() => undefined); // never answers
    const started = Date.now();
    expectV0Error(await relay(agent), 504, 'model_timed_out');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('bounds the calls one computer has in progress, and the other computers keep being served', async () => {
    await setModels([model()]).expect(200);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    vendor.script(async (_, res) => {
      await gate;
      json(res, 200, { ok: true });
    });
    const held = [relay(agent).then((res) => res.status), relay(agent).then((res) => res.status)];
    await until(() => vendor.requests.length === 2);
    const refused = await relay(agent);
    expectV0Error(refused, 429, 'too_many_relays');
    expect(refused.headers['retry-after']).toBe('5');
    const other = relay(await agentOf(t, owner)).then((res) => res.status);
    await until(() => vendor.requests.length === 3);
    release();
    expect(await Promise.all([...held, other])).toEqual([200, 200, 200]);
    await relay(agent).expect(200);
  });

  it('masks any secret of the model the vendor quotes back', async () => {
    await setModels([model({ extraHeaders: { 'X-Vendor-Key': HEADER_SECRET } })]).expect(200);
    vendor.script((request, res) =>
      json(res, 401, { error: `Incorrect API key provided: ${String(request.headers.authorization)} with ${String(request.headers['x-vendor-key'])}` }),
    );
    const res = await relay(agent).expect(401);
    expect(res.body.error).toBe(`Incorrect API key provided: Bearer ****6789 with ****cdef`);
  });

  it('streams server-sent events through as they come, secrets masked', async () => {
    await setModels([model()]).expect(200);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    vendor.script(async (_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n');
      await gate;
      res.write(`data: {"choices":[{"delta":{"content":"lo, your key is ${KEY}"}}]}\n\n`);
      res.end('data: [DONE]\n\n');
    });
    const url = new URL(await t.app.getUrl());
    const chunks: string[] = [];
    const answer = await new Promise<{ status: number; type: string; first: string; rest: Promise<string> }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: url.port,
          path: '/api/v0/agent/models/m/chat/completions',
          method: 'POST',
          headers: { ...agent, 'content-type': 'application/json' },
        },
        (res) => {
          res.setEncoding('utf8');
          res.once('data', (first: string) => {
            const rest = new Promise<string>((done) => {
              res.on('data', (chunk: string) => chunks.push(chunk));
              res.on('end', () => done(chunks.join('')));
            });
            resolve({ status: res.statusCode!, type: String(res.headers['content-type']), first, rest });
          });
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    });
    // The first event arrived while the vendor was still holding the rest back.
    expect(answer.status).toBe(200);
    expect(answer.type).toMatch(/^text\/event-stream/);
    expect(answer.first).toContain('"Hel"');
    release();
    const rest = await answer.rest;
    expect(rest).toContain('your key is ****6789');
    expect(rest).not.toContain(KEY);
    expect(rest).toContain('data: [DONE]');
  });

  it('keeps a stored secret bound to the address it was given for', async () => {
    await setModels([model({ extraHeaders: { 'X-Vendor-Key': HEADER_SECRET } })]).expect(200);
    const read = (await t.http().get('/api/v0/organization/enterprise-controls').set(owner.auth).expect(200)).body as Json;
    const asRead = read.settings.customModels[0] as Json;
    expect(asRead).toMatchObject({ apiKey: '****6789', extraHeaders: { 'X-Vendor-Key': '****cdef' } });

    // Pointing the model elsewhere with its secrets left masked (or the key left out) is refused, and nothing changes.
    const moved: Json = { ...asRead, baseUrl: 'https://collector.attacker.example/v1' };
    const res = await setModels([moved]);
    expectInvalid(res, 'settings.customModels[0].apiKey', { first: true });
    expect(res.body.metadata.errors.map((error: Json) => error.field)).toEqual([
      'settings.customModels[0].apiKey',
      'settings.customModels[0].extraHeaders.X-Vendor-Key',
    ]);
    const { apiKey: _key, ...keyless } = moved;
    void _key;
    expectInvalid(await setModels([{ ...keyless, extraHeaders: {} }]), 'settings.customModels[0].apiKey');
    expectInvalid(await setModels([{ ...asRead, baseUrl: `http://localhost:${bystander.port}/v1` }]), 'settings.customModels[0].apiKey');
    const after = (await t.http().get('/api/v0/organization/enterprise-controls').set(owner.auth).expect(200)).body as Json;
    expect(after.revision).toBe(read.revision);

    // On the same origin the masks still stand for the stored secrets, which still reach the vendor.
    await setModels([{ ...asRead, baseUrl: `${vendorUrl()}/`, displayName: 'Renamed' }]).expect(200);
    await relay(agent).expect(200);
    expect(vendor.requests.at(-1)!.headers).toMatchObject({ authorization: `Bearer ${KEY}`, 'x-vendor-key': HEADER_SECRET });

    // A new address with new secrets in full is a plain change.
    await setModels([
      { ...asRead, baseUrl: 'https://api.vendor.example/v1', apiKey: 'sk-new-vendor-key-5555', extraHeaders: { 'X-Vendor-Key': 'new-header-value-7777' } },
    ]).expect(200);
  });

  it('masks every secret in every answer that carries the settings, and stores them encrypted', async () => {
    const secretModel = model({
      extraHeaders: { 'X-Vendor-Key': HEADER_SECRET },
      cloudModelConfig: { cloudRegion: 'eu-west-1', cloudAuthRefresh: CLOUD_SECRET, cloudCredentialExport: `export TOKEN=${CLOUD_SECRET}` },
    });
    const changed = await setModels([secretModel]).expect(200);
    await setModels([{ ...secretModel, displayName: 'Second revision' }]).expect(200);
    const controls = await t.http().get('/api/v0/organization/enterprise-controls').set(owner.auth).expect(200);
    const history = await t.http().get('/api/v0/organization/enterprise-controls/history').set(owner.auth).expect(200);
    const revisions = await Promise.all(
      (history.body.changes as Json[]).map((change) =>
        t
          .http()
          .get(`/api/v0/organization/enterprise-controls/history/${change.revision as number}`)
          .set(owner.auth)
          .expect(200),
      ),
    );
    const agentPolicy = await t.http().get('/api/v0/agent/policy').set(agent).expect(200);
    const memberPolicy = await t.http().get('/api/v0/agent/policy').set(member.auth).expect(200);
    const answers = [changed, controls, history, ...revisions, agentPolicy, memberPolicy].map((res) => JSON.stringify(res.body));
    for (const text of answers) {
      for (const secret of [KEY, HEADER_SECRET, CLOUD_SECRET]) expect(text).not.toContain(secret);
    }
    expect(agentPolicy.body.customModels[0]).toMatchObject({
      apiKey: '****6789',
      extraHeaders: { 'X-Vendor-Key': '****cdef' },
      cloudModelConfig: { cloudRegion: 'eu-west-1', cloudAuthRefresh: '****xwvu' },
    });
    expectV0Error(await t.http().get('/api/v0/agent/policy').set(guest.auth), 403, 'insufficient_role');

    const stored = (await t.app
      .get(DataSource)
      .query('SELECT settings FROM enterprise_control_revisions WHERE organization_id = $1', [owner.organizationId])) as Array<{ settings: unknown }>;
    expect(stored.length).toBeGreaterThan(0);
    for (const row of stored) {
      const text = JSON.stringify(row.settings);
      for (const secret of [KEY, HEADER_SECRET, CLOUD_SECRET]) expect(text).not.toContain(secret);
    }
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5_000) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A byom computer of the user's: its agent token as Authorization. */
async function agentOf(t: TestApp, user: TestUser): Promise<Auth> {
  const res = await t
    .http()
    .post('/api/v0/computers')
    .set(user.auth)
    .send({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' })
    .expect(201);
  return { Authorization: `Bearer ${res.body.agentToken as string}` };
}

describe('Secrets stored by earlier versions (e2e)', () => {
  it('are encrypted at start-up, and still reach the vendor', async () => {
    const database = await createTestDatabase();
    const vendor = await new RecordingUpstream().start();
    const env = { MODEL_RELAY_ALLOWED_HOSTS: '127.0.0.1', CONTROLS_CACHE_MS: '0' };
    let t = await startTestApp(env, database);
    try {
      const owner = await createUser(t, Role.Owner);
      const agent = await agentOf(t, owner);
      await t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { customModels: [{ id: 'm', model: 'x', baseUrl: `http://127.0.0.1:${vendor.port}/v1` }] } })
        .expect(200);
      // As an earlier version wrote it: the header value and the cloud credential in plain text.
      const data = t.app.get(DataSource);
      const [row] = (await data.query('SELECT revision, settings FROM enterprise_control_revisions WHERE organization_id = $1', [
        owner.organizationId,
      ])) as Array<{ revision: number; settings: Json }>;
      row.settings.customModels[0].extraHeaders = { 'X-Vendor-Key': HEADER_SECRET };
      row.settings.customModels[0].cloudModelConfig = { cloudRegion: 'eu', cloudCredentialExport: CLOUD_SECRET };
      await data.query('UPDATE enterprise_control_revisions SET settings = $3 WHERE organization_id = $1 AND revision = $2', [
        owner.organizationId,
        row.revision,
        JSON.stringify(row.settings),
      ]);
      await t.close();

      t = await startTestApp(env, database);
      const [stored] = (await t.app
        .get(DataSource)
        .query('SELECT settings FROM enterprise_control_revisions WHERE organization_id = $1', [owner.organizationId])) as Array<{ settings: Json }>;
      expect(JSON.stringify(stored.settings)).not.toContain(HEADER_SECRET);
      expect(JSON.stringify(stored.settings)).not.toContain(CLOUD_SECRET);
      expect(stored.settings.customModels[0].cloudModelConfig.cloudRegion).toBe('eu');
      const read = await t.http().get('/api/v0/organization/enterprise-controls').set(owner.auth).expect(200);
      expect(read.body.settings.customModels[0]).toMatchObject({
        extraHeaders: { 'X-Vendor-Key': '****cdef' },
        cloudModelConfig: { cloudCredentialExport: '****xwvu' },
      });
      await t.http().post('/api/v0/agent/models/m/chat/completions').set(agent).send({ messages: [] }).expect(200);
      expect(vendor.requests[0].headers['x-vendor-key']).toBe(HEADER_SECRET);
    } finally {
      await t.close();
      await vendor.stop();
      await database.drop();
    }
  });
});
