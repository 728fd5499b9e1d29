import { IncomingMessage } from 'node:http';
import { hostname } from 'node:os';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { Body, until } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectV0Error } from '../utils/v0-errors';
import { WebhookReceiver } from '../utils/webhook-receiver';

const BASE = '/api/v0/organization/webhooks';
/** A name this machine resolves to 127.0.0.1 without any DNS server (/etc/hosts). */
const LOOPBACK_NAME = hostname();

/**
 * An organization owner tries to make the server deliver to its own listening port, in every spelling
 * of "this machine", both when saving the URL and when sending. The operator allows a loopback test
 * receiver: first by host and port (the usual), then by host on any port (loopback hosts allowed
 * wholesale), where only the "never this server's listening port" rule stands between the owner and
 * the server's own API.
 */
describe.each([
  ["the receiver's port only", (receiverPort: number) => `127.0.0.1:${receiverPort}`, false],
  ['loopback hosts on any port', () => `127.0.0.1,localhost,[::1],0.0.0.0,${LOOPBACK_NAME}`, true],
])('A webhook aimed at the server itself (WEBHOOK_ALLOWED_HOSTS: %s)', (_, allowed, loopbackAllowedByName) => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let owner: TestUser;
  let port: number;
  /** Requests that reached the server under a path only a webhook delivery would use. */
  const reachedSelf: string[] = [];

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await startTestApp({
      WEBHOOK_ALLOWED_HOSTS: allowed(receiver.port),
      WEBHOOK_RETRY_SCHEDULE_MS: '100',
      WEBHOOK_TIMEOUT_MS: '400',
      WEBHOOK_POLL_MS: '50',
      EVENT_LISTENER_SWEEP_MS: '100',
    });
    port = (t.app.getHttpServer().address() as { port: number }).port;
    t.app.getHttpServer().on('request', (req: IncomingMessage) => {
      if (req.url?.startsWith('/self-')) reachedSelf.push(req.url);
    });
    owner = await createUser(t, Role.Owner, await createOrganization(t));
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.stop();
  });

  /** Every way to write this machine's address with the server's port. */
  const spellings = () => [
    `http://127.0.0.1:${port}/self-a`,
    `http://localhost:${port}/self-b`,
    `http://localhost.:${port}/self-c`,
    `http://[::1]:${port}/self-d`,
    `http://0.0.0.0:${port}/self-e`,
    `http://2130706433:${port}/self-f`,
    `http://0x7f000001:${port}/self-g`,
    `http://[::ffff:127.0.0.1]:${port}/self-h`,
    `http://127.1:${port}/self-i`,
    `https://127.0.0.1:${port}/self-j`,
  ];

  it("refuses every spelling of this machine on the server's port when the URL is saved, with the reason, on create and on change", async () => {
    const kept = (
      await t
        .http()
        .post(BASE)
        .set(owner.auth)
        .send({ url: receiver.url('/fine') })
        .expect(201)
    ).body as Body;
    for (const url of spellings()) {
      const created = await t.http().post(BASE).set(owner.auth).send({ url });
      expectV0Error(created, 400, 'webhook_url_refused');
      // Refused as this server, or (where the operator did not allow the host) as loopback or unspecified: never accepted.
      expect([url, created.body.metadata?.reason]).toEqual([url, expect.stringMatching(/this server|loopback|unspecified|IPv4-mapped/)]);
      expect(created.body.detail).toContain(created.body.metadata.reason);
      const changed = await t
        .http()
        .patch(`${BASE}/${kept.id as string}`)
        .set(owner.auth)
        .send({ url });
      expectV0Error(changed, 400, 'webhook_url_refused');
    }
    const listed = (await t.http().get(BASE).set(owner.auth).expect(200)).body.webhooks as Body[];
    expect(listed.map((w) => w.url)).toEqual([receiver.url('/fine')]);
  });

  (loopbackAllowedByName ? it : it.skip)('refuses this server\'s port as "this server" wherever the operator allows the host by name', async () => {
    for (const url of spellings().filter((u) => !u.includes('ffff'))) {
      const res = await t.http().post(BASE).set(owner.auth).send({ url });
      expect([url, res.status, res.body.metadata?.reason]).toEqual([url, 400, expect.stringContaining('is this server')]);
    }
  });

  it('refuses at send time a name that resolves to this machine, and a stored URL of any spelling, and nothing reaches the server', async () => {
    const user = await createUser(t, Role.Owner, await createOrganization(t));
    // A name is resolved at each delivery, so it is accepted when saved...
    const named = (
      await t
        .http()
        .post(BASE)
        .set(user.auth)
        .send({ url: `https://${LOOPBACK_NAME}:${port}/self-named`, eventTypes: ['session.created'] })
        .expect(201)
    ).body as Body;
    // ...and rows written under other rules (an older server, another PORT) are checked again at each attempt.
    const stored: Body[] = [];
    for (const url of spellings()) {
      const webhook = (
        await t
          .http()
          .post(BASE)
          .set(user.auth)
          .send({ url: receiver.url('/placeholder'), eventTypes: ['session.created'] })
          .expect(201)
      ).body as Body;
      await t.app.get(DataSource).query(`UPDATE webhooks SET url = $2 WHERE id = $1`, [webhook.id, url]);
      stored.push({ ...webhook, url });
    }
    await t.http().post('/api/v0/sessions').set(user.auth).send({ title: 'bait' }).expect(201);
    for (const webhook of [{ ...named, url: `https://${LOOPBACK_NAME}:${port}/self-named` }, ...stored]) {
      const [delivery] = await until(
        async () =>
          (
            await t
              .http()
              .get(`${BASE}/${webhook.id as string}/deliveries`)
              .set(user.auth)
          ).body.deliveries as Body[],
        (d) => d.length === 1 && (d[0].attempts as Body[]).length >= 2,
        `two refused attempts to ${webhook.url as string}`,
        10_000,
      );
      for (const attempt of delivery.attempts as Body[]) {
        expect([webhook.url, attempt]).toEqual([
          webhook.url,
          expect.objectContaining({ statusCode: null, error: expect.stringMatching(/^refused: .*(this server|loopback|unspecified|IPv4-mapped)/) }),
        ]);
      }
    }
    expect(reachedSelf).toEqual([]);
    expect(receiver.received.filter((r) => r.path === '/placeholder')).toEqual([]);
  });
});
