import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServerProcess, startServer } from '../utils/processes';
import { until } from '../utils/polling';
import { createTestDatabase, TestDatabase } from '../utils/test-database';
import { WebhookReceiver } from '../utils/webhook-receiver';

/**
 * "kill -9 between commit and dispatch loses no webhook delivery": the real server, killed with
 * SIGKILL right after the commits its answers acknowledge, started again on the same database.
 */
describe('webhook deliveries survive SIGKILL', () => {
  let database: TestDatabase;
  let receiver: WebhookReceiver;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    receiver = await new WebhookReceiver().start();
  });

  afterAll(async () => {
    await server?.stop();
    await receiver.stop();
    await database.drop();
  });

  it('every event acknowledged before the kill reaches the receiver once the server is back, signed, and the secret is never logged', async () => {
    const env = { ...database.env, WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${receiver.port}`, WEBHOOK_POLL_MS: '100', EVENT_LISTENER_SWEEP_MS: '200' };
    // The first process sends nothing (WEBHOOK_CONCURRENCY=0): whatever it committed must come from the log after the kill.
    server = await startServer(['--demo'], { ...env, WEBHOOK_CONCURRENCY: '0' });
    const keys = JSON.parse(await readFile(join(database.dataDir, 'demo-keys.json'), 'utf8')) as Record<string, Record<string, string>>;
    const headers = { Authorization: `Bearer ${keys.acme.owner}`, 'content-type': 'application/json' };
    const created = await fetch(`${server.url}/api/v0/organization/webhooks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: receiver.url('/crash'), eventTypes: ['session.created', 'message.added'] }),
    });
    expect(created.status).toBe(201);
    const { secret } = (await created.json()) as { secret: string };
    receiver.secret('/crash', secret);

    const sessionRes = await fetch(`${server.url}/api/v0/sessions`, { method: 'POST', headers, body: JSON.stringify({ title: 'crash' }) });
    const { sessionId } = (await sessionRes.json()) as { sessionId: string };
    const acknowledged: string[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await fetch(`${server!.url}/api/v0/sessions/${sessionId}/messages`, { method: 'POST', headers, body: JSON.stringify({ text: `m${i}` }) });
        if (res.status === 200) acknowledged.push(((await res.json()) as { messageId: string }).messageId);
      }),
    );
    server.child.kill('SIGKILL');
    await new Promise((resolve) => server!.child.once('exit', resolve));
    const firstOutput = server.output();
    expect(acknowledged).toHaveLength(20);
    expect(receiver.received).toEqual([]);

    server = await startServer([], env);
    const got = await until(
      () => receiver.delivered('/crash'),
      (d) => new Set(d.map((e) => e.id)).size >= 21,
      'every acknowledged event',
      30_000,
    );
    expect(receiver.received.filter((r) => r.invalid)).toEqual([]);
    const messages = new Set(got.filter((e) => e.type === 'message.added').map((e) => e.data.messageId));
    expect([...messages].sort()).toEqual([...acknowledged].sort());
    expect(got.filter((e) => e.type === 'session.created').map((e) => e.sessionId)).toContain(sessionId);
    for (const output of [firstOutput, server.output()]) {
      expect(output).not.toContain(secret);
      expect(output).not.toContain(secret.slice(6));
    }
  });
});
