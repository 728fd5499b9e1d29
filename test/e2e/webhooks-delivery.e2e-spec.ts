import Ajv2020 from 'ajv/dist/2020';
import { Role } from '../../src/modules/auth';
import { EventLog } from '../../src/platform/events';
import { createOrganization, createUser } from '../utils/factories';
import { Body, sleep, until } from '../utils/polling';
import { TestApp } from '../utils/test-app';
import { WebhookReceiver } from '../utils/webhook-receiver';
import { BASE, webhooksFixture } from '../utils/fixtures/webhooks';

/**
 * Webhooks over HTTP against the real app and a real receiver on loopback that verifies every
 * signature with the secret shown once: delivery, through failures and retries, to the
 * webhooks that are enabled, and the disabling of one that keeps failing.
 */
describe('Webhooks', () => {
  const fixture = webhooksFixture();
  const { hook, newSession } = fixture;
  let t: TestApp;
  let receiver: WebhookReceiver;
  beforeAll(() => ({ t, receiver } = fixture));

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
});
