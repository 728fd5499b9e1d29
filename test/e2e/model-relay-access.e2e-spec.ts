import { SignJWT } from 'jose';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { json, RecordingUpstream } from '../utils/recording-upstream';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectInvalid, expectV0Error } from '../utils/v0-errors';
import { agentOf, Auth, HEADER_SECRET, Json, JWT_SECRET, KEY, modelRelayFixture } from '../utils/fixtures/model-relay';

async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5_000) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * The model relay, tried from the member's side: who may call it, where it may be made to go (and
 * where a stored key may be sent), and how many calls one computer may have in progress. Real local
 * servers stand in for vendors and record what reaches them.
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

  it("keeps to the organization's networkPolicy.allowedIps too: a model the operator allows, outside them, is refused unsent", async () => {
    const { t, owner, agent } = fixture;
    const controls = (allowedIps: string[]) =>
      t
        .http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { customModels: [model()], networkPolicy: { allowedIps } } })
        .expect(200);
    try {
      await controls(['10.0.0.0/8']);
      const res = await relay(agent);
      expectV0Error(res, 403, 'model_address_refused');
      expect(res.body.detail).toMatch(/outside the organization's allowed IPs \(networkPolicy\.allowedIps: 10\.0\.0\.0\/8\)/);
      expect(vendor.requests).toEqual([]);
      // Inside them (localhost may resolve to both loopbacks), the operator's exception applies as before.
      await controls(['127.0.0.1/32', '::1/128']);
      await relay(agent).expect(200);
      expect(vendor.requests).toHaveLength(1);
    } finally {
      await controls([]);
    }
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
});
