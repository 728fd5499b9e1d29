import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServerProcess, startServer } from '../utils/processes';
import { createTestDatabase, TestDatabase } from '../utils/test-database';

/** "A crash after a 200 loses nothing that was acknowledged": the real server, killed with SIGKILL. */
describe('durability', () => {
  let database: TestDatabase;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
  });

  afterAll(async () => {
    await server?.stop();
    await database.drop();
  });

  it('every acknowledged message survives SIGKILL right after its 200', async () => {
    server = await startServer(['--demo'], database.env);
    const keys = JSON.parse(await readFile(join(database.dataDir, 'demo-keys.json'), 'utf8')) as Record<string, Record<string, string>>;
    const headers = { Authorization: `Bearer ${keys.acme.owner}`, 'content-type': 'application/json' };
    const created = await fetch(`${server.url}/api/v0/sessions`, { method: 'POST', headers, body: JSON.stringify({ title: 'crash test' }) });
    const { sessionId } = (await created.json()) as { sessionId: string };

    const acknowledged: string[] = [];
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const res = await fetch(`${server!.url}/api/v0/sessions/${sessionId}/messages`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ text: `message ${i}` }),
        });
        if (res.status === 200) acknowledged.push(((await res.json()) as { messageId: string }).messageId);
      }),
    );
    server.child.kill('SIGKILL');
    await new Promise((resolve) => server!.child.once('exit', resolve));
    expect(acknowledged).toHaveLength(30);

    // The killed server's lock is taken over at once: its pid no longer runs.
    server = await startServer([], database.env);
    const session = (await (await fetch(`${server.url}/api/v0/sessions/${sessionId}`, { headers })).json()) as { messageCount: number };
    expect(session.messageCount).toBe(30);
    const listed = (await (await fetch(`${server.url}/api/v0/sessions/${sessionId}/messages?limit=100`, { headers })).json()) as {
      messages: Array<{ id: string }>;
    };
    expect(listed.messages.map((m) => m.id).sort()).toEqual([...acknowledged].sort());
  });

  it('SIGKILL while messages are being added loses no event: every stored message has its one message.added, numbered with no gap once the server is back', async () => {
    await server?.stop();
    // Fast sweeps; no rate limit in the way of 80 messages at once.
    const env = { ...database.env, EVENT_LISTENER_SWEEP_MS: '200', RATE_LIMIT_CREDENTIAL_PER_MINUTE: '100000', RATE_LIMIT_ORGANIZATION_PER_MINUTE: '100000' };
    server = await startServer([], env);
    const keys = JSON.parse(await readFile(join(database.dataDir, 'demo-keys.json'), 'utf8')) as Record<string, Record<string, string>>;
    const headers = { Authorization: `Bearer ${keys.acme.owner}`, 'content-type': 'application/json' };
    const created = await fetch(`${server.url}/api/v0/sessions`, { method: 'POST', headers, body: JSON.stringify({ title: 'killed mid-flight' }) });
    const { sessionId } = (await created.json()) as { sessionId: string };
    const url = server.url;
    let answered = 0;
    const sending = Array.from({ length: 80 }, async (_, i) => {
      const res = await fetch(`${url}/api/v0/sessions/${sessionId}/messages`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ text: `message ${i}` }),
      }).catch(() => null);
      if (res?.status === 200) answered++;
    });
    // Killed while some are committed and not yet numbered, some in flight, some not sent.
    const killBy = Date.now() + 20_000;
    while (answered < 20 && Date.now() < killBy) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(answered).toBeGreaterThanOrEqual(20);
    server.child.kill('SIGKILL');
    await new Promise((resolve) => server!.child.once('exit', resolve));
    await Promise.all(sending);

    server = await startServer([], env);
    const listed = (await (await fetch(`${server.url}/api/v0/sessions/${sessionId}/messages?limit=100`, { headers })).json()) as {
      messages: Array<{ id: string }>;
    };
    const stored = listed.messages.map((m) => m.id).sort();
    expect(stored.length).toBeGreaterThanOrEqual(20);
    type Page = { events: Array<{ seq: number; type: string; data: { messageId?: string } }>; pagination: { nextCursor: string | null } };
    /** Every event of a list, page after page. */
    const everyEvent = async (path: string) => {
      const events: Page['events'] = [];
      let cursor: string | null = null;
      do {
        const page = (await (
          await fetch(`${server!.url}${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { headers })
        ).json()) as Page;
        events.push(...page.events);
        cursor = page.pagination.nextCursor;
      } while (cursor);
      return events;
    };
    const added = async () => (await everyEvent(`/api/v0/sessions/${sessionId}/events`)).filter((e) => e.type === 'message.added');
    // The sweep numbers what the killed process committed but never numbered.
    const deadline = Date.now() + 10_000;
    while ((await added()).length < stored.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await added()).map((e) => e.data.messageId).sort()).toEqual(stored);
    // The organization's whole log: 1, 2, 3... with no gap and no duplicate.
    const all = (await everyEvent('/api/v0/events')).map((e) => e.seq);
    expect(all).toEqual(all.map((_, i) => all[0] + i));
  });
});
