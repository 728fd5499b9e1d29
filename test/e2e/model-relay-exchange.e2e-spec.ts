import { request as httpRequest } from 'node:http';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { ENDED_EARLY_MS } from '../utils/polling';
import { json, RecordingUpstream } from '../utils/recording-upstream';
import { createTestDatabase } from '../utils/test-database';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectV0Error } from '../utils/v0-errors';
import { agentOf, Auth, CLOUD_SECRET, HEADER_SECRET, Json, KEY, modelRelayFixture } from '../utils/fixtures/model-relay';

/**
 * The model relay, tried from the member's side: what crosses it each way (the request it builds, the
 * answers it passes back or refuses, streams), and whether a stored key can be read back: masked in
 * every answer, stored encrypted, also when an earlier version wrote it. Real local servers stand in
 * for vendors and record what reaches them.
 */
describe('Model relay (e2e)', () => {
  const fixture = modelRelayFixture();
  const { vendor, bystander, vendorUrl, setModels, relay, model } = fixture;
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let guest: TestUser;
  let agent: Auth;
  beforeAll(() => ({ t, owner, member, guest, agent } = fixture));

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
    // At MODEL_RELAY_TIMEOUT_MS (1.5 s here), not the default's 10 minutes.
    expect(Date.now() - started).toBeLessThan(ENDED_EARLY_MS);
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
