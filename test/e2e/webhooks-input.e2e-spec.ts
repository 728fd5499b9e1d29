import { hostname } from 'node:os';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { Body, until } from '../utils/polling';
import { TestApp } from '../utils/test-app';
import { expectV0Error } from '../utils/v0-errors';
import { WebhookReceiver } from '../utils/webhook-receiver';
import { BASE, webhooksFixture } from '../utils/fixtures/webhooks';

/**
 * Webhooks over HTTP against the real app and a real receiver on loopback: what the API refuses
 * (callers other than owners and managers, invalid event types and fields), and targets the
 * address rules forbid, when saved and when sent.
 */
describe('Webhooks', () => {
  const fixture = webhooksFixture();
  const { hook, newSession } = fixture;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let internal: WebhookReceiver;
  let owner: TestUser;
  beforeAll(() => ({ t, receiver, internal, owner } = fixture));

  it("lets only owners and managers in, and answers another organization's webhook 404", async () => {
    const org = await createOrganization(t);
    const manager = await createUser(t, Role.Manager, org);
    const mine = await hook(manager, '/mine');
    for (const role of [Role.Member, Role.Guest]) {
      const user = await createUser(t, role, org);
      expectV0Error(await t.http().get(BASE).set(user.auth), 403, 'insufficient_role');
      expectV0Error(
        await t
          .http()
          .post(BASE)
          .set(user.auth)
          .send({ url: receiver.url('/x') }),
        403,
        'insufficient_role',
      );
      expectV0Error(
        await t
          .http()
          .get(`${BASE}/${mine.id as string}/deliveries`)
          .set(user.auth),
        403,
        'insufficient_role',
      );
    }
    const stranger = await createUser(t, Role.Owner);
    const id = mine.id as string;
    for (const [method, path] of [
      ['get', `${BASE}/${id}`],
      ['patch', `${BASE}/${id}`],
      ['delete', `${BASE}/${id}`],
      ['post', `${BASE}/${id}/rotate-secret`],
      ['get', `${BASE}/${id}/deliveries`],
      ['get', `${BASE}/not-a-uuid`],
    ] as const) {
      const http = t.http();
      expectV0Error(
        await http[method](path)
          .set(stranger.auth)
          .send(method === 'patch' ? { enabled: false } : undefined),
        404,
        'webhook_not_found',
      );
    }
    expect((await t.http().get(BASE).set(stranger.auth).expect(200)).body.webhooks).toEqual([]);
    expect((await t.http().get(`${BASE}/${id}`).set(manager.auth).expect(200)).body.enabled).toBe(true);
  });

  it('validates event types and fields', async () => {
    expectV0Error(
      await t
        .http()
        .post(BASE)
        .set(owner.auth)
        .send({ url: receiver.url('/v'), eventTypes: ['session.exploded'] }),
      400,
      'validation_failed',
    );
    expectV0Error(
      await t
        .http()
        .post(BASE)
        .set(owner.auth)
        .send({ url: receiver.url('/v'), extra: 1 }),
      400,
      'validation_failed',
    );
    expectV0Error(await t.http().post(BASE).set(owner.auth).send({ url: 'not a url' }), 400, 'validation_failed');
    expectV0Error(
      await t
        .http()
        .post(BASE)
        .set(owner.auth)
        .send({ url: receiver.url('/v'), enabled: 'yes' }),
      400,
      'validation_failed',
    );
  });

  describe('refuses targets the address rules forbid', () => {
    const literals = [
      'https://127.0.0.1/',
      `http://127.0.0.1:${1}/`,
      'https://10.0.0.1/hook',
      'https://192.168.1.1/',
      'https://169.254.169.254/latest/meta-data/',
      'https://[fd00:ec2::254]/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:a9fe:a9fe]/',
      'https://2130706433/',
      'https://0x7f.0.0.1/',
      'https://0177.0.0.1/',
      'https://127.1/',
      'https://localhost/',
      'https://metadata.google.internal/computeMetadata/v1/',
      'http://hooks.example.com/',
      'https://user:secret@hooks.example.com/',
      'ftp://hooks.example.com/',
      'https://hooks.example.com/#frag',
    ];
    it.each(literals)('%s at create time', async (url) => {
      const res = await t.http().post(BASE).set(owner.auth).send({ url });
      expectV0Error(res, 400, 'webhook_url_refused');
    });

    it('on change too', async () => {
      const webhook = await hook(owner, '/patched');
      expectV0Error(
        await t
          .http()
          .patch(`${BASE}/${webhook.id as string}`)
          .set(owner.auth)
          .send({ url: 'https://169.254.169.254/' }),
        400,
        'webhook_url_refused',
      );
    });

    it('a name that resolves to a non-public address, at delivery time, and nothing reaches the target', async () => {
      const user = await createUser(t, Role.Owner, await createOrganization(t));
      const name = hostname();
      const created = await t
        .http()
        .post(BASE)
        .set(user.auth)
        .send({ url: `https://${name}:${internal.port}/steal`, eventTypes: ['session.created'] })
        .expect(201);
      await newSession(user);
      const log = await until(
        async () =>
          (
            await t
              .http()
              .get(`${BASE}/${created.body.id as string}/deliveries`)
              .set(user.auth)
          ).body.deliveries as Body[],
        (d) => d.length === 1 && (d[0].attempts as Body[]).length >= 2,
        'refused attempts',
        10_000,
      );
      expect((log[0].attempts as Body[])[0]).toMatchObject({ statusCode: null, error: expect.stringMatching(/^refused: /) });
      expect(internal.connections).toBe(0);
    });

    it('a redirect to an internal address is not followed', async () => {
      const user = await createUser(t, Role.Owner, await createOrganization(t));
      const webhook = await hook(user, '/redirects', { eventTypes: ['session.created'] });
      receiver.script('/redirects', { redirect: `http://127.0.0.1:${internal.port}/steal` }, { redirect: `http://127.0.0.1:${internal.port}/steal` });
      await newSession(user);
      await until(
        () => receiver.delivered('/redirects'),
        (d) => d.length === 1,
        'the delivery after two redirects',
        10_000,
      );
      // The receiver has it before the sender writes the attempt down.
      const attempts = async () =>
        (
          (
            await t
              .http()
              .get(`${BASE}/${webhook.id as string}/deliveries`)
              .set(user.auth)
              .expect(200)
          ).body.deliveries as Body[]
        )[0].attempts as Body[];
      const logged = await until(attempts, (a) => a.length === 3, 'the third attempt in the log', 5_000);
      expect(logged.map((a) => a.statusCode)).toEqual([302, 302, 200]);
      expect(logged[0].error).toMatch(/redirect/);
      expect(internal.connections).toBe(0);
    });
  });
});
