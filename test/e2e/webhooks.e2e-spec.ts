import Ajv2020 from 'ajv/dist/2020';
import { hostname } from 'node:os';
import { Role } from '../../src/modules/auth';
import { EventLog } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { Body, sleep, until } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectV0Error } from '../utils/v0-errors';
import { WebhookReceiver } from '../utils/webhook-receiver';

const BASE = '/api/v0/organization/webhooks';

/**
 * Webhooks over HTTP against the real app and a real receiver on loopback that verifies every
 * signature with the secret shown once (standardwebhooks, the reference implementation). Retries,
 * timeouts and the failing period are configured short so the whole story runs in seconds.
 */
describe('Webhooks', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  /** Stands in for an internal service: nothing may ever connect to it. */
  let internal: WebhookReceiver;
  let owner: TestUser;

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    internal = await new WebhookReceiver().start();
    t = await startTestApp({
      WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${receiver.port}`,
      WEBHOOK_RETRY_SCHEDULE_MS: '100,150,200,250,300',
      WEBHOOK_TIMEOUT_MS: '400',
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_DISABLE_AFTER_MS: '2500',
      EVENT_LISTENER_SWEEP_MS: '100',
    });
    owner = await createUser(t, Role.Owner);
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.stop();
    await internal?.stop();
  });

  /** Creates a webhook to `path` on the receiver, which then verifies with its secret. */
  async function hook(user: TestUser, path: string, body: Body = {}): Promise<Body> {
    const res = await t
      .http()
      .post(BASE)
      .set(user.auth)
      .send({ url: receiver.url(path), ...body })
      .expect(201);
    receiver.secret(path, res.body.secret as string);
    return res.body;
  }

  const newSession = async (user: TestUser) =>
    (await t.http().post('/api/v0/sessions').set(user.auth).send({ title: 'hello' }).expect(201)).body.sessionId as string;

  it('shows the secret once, then only masked; the receiver verifies every delivery with it', async () => {
    const user = await createUser(t, Role.Manager, await createOrganization(t));
    const created = await hook(user, '/once', { eventTypes: ['session.created', 'message.added'], description: 'CI' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.secretHint).toBe(`whsec_…${(created.secret as string).slice(-4)}`);
    const read = await t
      .http()
      .get(`${BASE}/${created.id as string}`)
      .set(user.auth)
      .expect(200);
    const listed = await t.http().get(BASE).set(user.auth).expect(200);
    for (const view of [read.body, listed.body.webhooks[0]]) {
      expect(view).not.toHaveProperty('secret');
      expect(JSON.stringify(view)).not.toContain((created.secret as string).slice(6, 30));
      expect(view).toMatchObject({ id: created.id, eventTypes: ['message.added', 'session.created'], enabled: true, description: 'CI' });
    }

    const sessionId = await newSession(user);
    const message = await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(user.auth).send({ text: 'hi' }).expect(200);
    const got = await until(
      () => receiver.delivered('/once'),
      (d) => d.length >= 2,
      'two deliveries',
      10_000,
    );
    expect(receiver.received.filter((r) => r.path === '/once' && r.invalid)).toEqual([]);
    expect(got.map((e) => e.type).sort()).toEqual(['message.added', 'session.created']);
    const added = got.find((e) => e.type === 'message.added')!;
    expect(added).toMatchObject({ sessionId, data: { messageId: message.body.messageId, role: 'user' } });
    const request = receiver.received.find((r) => r.event?.id === added.id)!;
    expect(request.headers['webhook-id']).toBe(added.id);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toBe('agent-platform-webhooks/1');
    // Only the types it asked for: the webhook.created event was not sent to it.
    expect(got.some((e) => e.type === 'webhook.created')).toBe(false);
    // The body is the documented Event, as the streams send it.
    const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });
    ajv.addSchema({ ...((await t.http().get('/docs-json')).body as object), $id: 'openapi' });
    const validate = ajv.compile({ $ref: 'openapi#/components/schemas/Event' });
    for (const event of got) expect(validate(event) ? null : ajv.errorsText(validate.errors)).toBeNull();
    expect(added).toMatchObject({ organizationId: user.organizationId, target: { kind: 'message', id: message.body.messageId } });

    // A rotated secret: the old one no longer verifies, the new one does.
    const rotated = await t
      .http()
      .post(`${BASE}/${created.id as string}/rotate-secret`)
      .set(user.auth)
      .expect(200);
    expect(rotated.body.secret).not.toBe(created.secret);
    await newSession(user);
    await until(
      () => receiver.received.filter((r) => r.path === '/once'),
      (r) => r.length >= 3,
      'a delivery after rotation',
      10_000,
    );
    expect(receiver.received.filter((r) => r.path === '/once').at(-1)!.invalid).toBeDefined();
    receiver.secret('/once', rotated.body.secret as string);
    await newSession(user);
    await until(
      () => receiver.delivered('/once'),
      (d) => d.length >= 3,
      'a verified delivery with the new secret',
      10_000,
    );
  });

  it('gets each event at least once through 500s, a timeout and a connection reset, with backoff, and logs every attempt', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t));
    const webhook = await hook(user, '/flaky', { eventTypes: ['session.created'] });
    receiver.script('/flaky', 500, 'hang', 'reset', 503);
    const sessionId = await newSession(user);
    const [event] = await until(
      () => receiver.delivered('/flaky'),
      (d) => d.length >= 1,
      'the delivery after four failures',
      15_000,
    );
    expect(event).toMatchObject({ type: 'session.created', sessionId });
    const tries = receiver.received.filter((r) => r.path === '/flaky');
    expect(tries).toHaveLength(5);
    expect(new Set(tries.map((r) => r.headers['webhook-id']))).toEqual(new Set([event.id]));

    // The receiver has it before the sender writes the attempt down.
    const [delivery] = await until(
      async () =>
        (
          await t
            .http()
            .get(`${BASE}/${webhook.id as string}/deliveries`)
            .set(user.auth)
            .expect(200)
        ).body.deliveries as Body[],
      (d) => d[0]?.status === 'delivered',
      'the delivery written down as delivered',
      5_000,
    );
    expect(delivery).toMatchObject({ eventId: event.id, eventType: 'session.created', status: 'delivered', nextAttemptAt: null });
    const attempts = delivery.attempts as Body[];
    expect(attempts.map((a) => a.statusCode)).toEqual([500, null, null, 503, 200]);
    expect(attempts[1].error).toMatch(/did not answer within 400 ms/);
    expect(attempts[2].error).toMatch(/could not be reached: (ECONNRESET|socket hang up)/);
    expect(attempts[4].error).toBeNull();
    // Backoff: each wait at least 80% of the schedule's (100, 150, 200, 250 ms).
    const starts = attempts.map((a) => (a.at as number) + (a.durationMs as number));
    [100, 150, 200].forEach((wait, i) => expect((attempts[i + 1].at as number) - starts[i]).toBeGreaterThanOrEqual(wait * 0.8 - 5));
  });

  it('fails a delivery after the last retry, and sends it again on redeliver with the same webhook-id', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t));
    const webhook = await hook(user, '/down', { eventTypes: ['session.created'] });
    receiver.script('/down', 500, 500, 500, 500, 500, 500);
    await newSession(user);
    const path = `${BASE}/${webhook.id as string}/deliveries`;
    const failed = await until(
      async () => (await t.http().get(`${path}?status=failed`).set(user.auth)).body.deliveries as Body[],
      (d) => d.length === 1,
      'a failed delivery',
      15_000,
    );
    expect(failed[0].attempts).toHaveLength(6);
    const again = await t
      .http()
      .post(`${path}/${failed[0].id as string}/redeliver`)
      .set(user.auth)
      .expect(200);
    expect(again.body.status).toBe('pending');
    const [event] = await until(
      () => receiver.delivered('/down'),
      (d) => d.length === 1,
      'the redelivery',
      10_000,
    );
    expect(event.id).toBe(failed[0].eventId);
    await t.http().post(`${path}/00000000-0000-4000-8000-000000000000/redeliver`).set(user.auth).expect(404);
  });

  it('sends nothing to a disabled or deleted webhook, pending retries included', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t));
    const off = await hook(user, '/off', { enabled: false });
    const gone = await hook(user, '/gone');
    const paused = await hook(user, '/paused');
    receiver.script('/paused', 500);
    receiver.script('/gone', 500);
    await newSession(user);
    await until(
      () => receiver.received.filter((r) => r.path === '/gone' || r.path === '/paused'),
      (r) => r.length >= 2,
      'the first failed attempts',
      10_000,
    );
    await t
      .http()
      .delete(`${BASE}/${gone.id as string}`)
      .set(user.auth)
      .expect(200);
    await t
      .http()
      .patch(`${BASE}/${paused.id as string}`)
      .set(user.auth)
      .send({ enabled: false })
      .expect(200);
    const reachedThem = () => receiver.received.filter((r) => ['/off', '/gone', '/paused'].includes(r.path)).length;
    const before = reachedThem();
    await newSession(user);
    // Past the retries the deleted and paused webhooks had due (100 ms).
    await sleep(1000);
    expect(reachedThem()).toBe(before);
    expect(receiver.received.filter((r) => r.path === '/off')).toEqual([]);
    await t
      .http()
      .get(`${BASE}/${gone.id as string}`)
      .set(user.auth)
      .expect(404);
    const offLog = await t
      .http()
      .get(`${BASE}/${off.id as string}/deliveries`)
      .set(user.auth)
      .expect(200);
    expect(offLog.body.deliveries).toEqual([]);
    // Enabled again, its pending retry goes out; the events of the disabled time are not sent.
    await t
      .http()
      .patch(`${BASE}/${paused.id as string}`)
      .set(user.auth)
      .send({ enabled: true })
      .expect(200);
    // The first session's event arrives once (now, if its failed attempt waited out the pause); the second session's, made while paused, never.
    const sessionCreated = () => receiver.delivered('/paused').filter((e) => e.type === 'session.created');
    await until(sessionCreated, (d) => d.length >= 1, 'the resumed retry', 10_000);
    await sleep(500);
    expect(sessionCreated()).toHaveLength(1);
  });

  it('does not send an event made while a webhook was disabled, even when it is enabled again before the event is queued', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t));
    const flicker = await hook(user, '/flicker', { eventTypes: ['session.created'] });
    await t
      .http()
      .patch(`${BASE}/${flicker.id as string}`)
      .set(user.auth)
      .send({ enabled: false })
      .expect(200);
    const whileOff = await newSession(user);
    // Enabled again at once: the queueing listener most likely reaches the event only after this.
    await t
      .http()
      .patch(`${BASE}/${flicker.id as string}`)
      .set(user.auth)
      .send({ enabled: true })
      .expect(200);
    const afterOn = await newSession(user);
    const got = await until(
      () => receiver.delivered('/flicker'),
      (d) => d.some((e) => e.sessionId === afterOn),
      'the event made after enabling',
      10_000,
    );
    expect(got.map((e) => e.sessionId)).not.toContain(whileOff);
  });

  it('disables a webhook that keeps failing and says so with webhook.disabled', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t));
    const failing = await hook(user, '/always-500', { eventTypes: ['session.created'] });
    await hook(user, '/watcher', { eventTypes: ['webhook.disabled'] });
    receiver.script('/always-500', ...Array<number>(200).fill(500));
    const deadline = Date.now() + 15_000;
    let view: Body = {};
    while (Date.now() < deadline) {
      await newSession(user);
      view = (
        await t
          .http()
          .get(`${BASE}/${failing.id as string}`)
          .set(user.auth)
          .expect(200)
      ).body;
      if (!view.enabled) break;
      await sleep(300);
    }
    expect(view).toMatchObject({ enabled: false, disabledReason: 'endpoint_failing' });
    const [disabled] = await until(
      () => receiver.delivered('/watcher'),
      (d) => d.length >= 1,
      'webhook.disabled at the watcher',
      10_000,
    );
    expect(disabled).toMatchObject({
      type: 'webhook.disabled',
      actor: { kind: 'system' },
      data: { webhookId: failing.id, reason: 'endpoint_failing', enabled: false },
    });
    expect(disabled.data.origin).toBe(`http://127.0.0.1:${receiver.port}`);
    const logged = await t.app.get(EventLog).read(user.organizationId, { after: 0, limit: 100, types: ['webhook.disabled'] });
    expect(logged).toHaveLength(1);
    // Enabling it again clears the record of failures.
    const enabled = await t
      .http()
      .patch(`${BASE}/${failing.id as string}`)
      .set(user.auth)
      .send({ enabled: true })
      .expect(200);
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
    await t
      .http()
      .patch(`${BASE}/${failing.id as string}`)
      .set(user.auth)
      .send({ enabled: false })
      .expect(200);
  });

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
