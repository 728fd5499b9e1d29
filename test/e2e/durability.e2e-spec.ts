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
        const res = await fetch(`${server!.url}/api/v0/sessions/${sessionId}/messages`, { method: 'POST', headers, body: JSON.stringify({ text: `message ${i}` }) });
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
});
