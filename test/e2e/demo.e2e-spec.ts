import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';
import { runNode, ServerProcess, startServer } from '../utils/processes';

type DemoKeys = Record<string, Record<string, string>>;

const keysOf = async (res: Response) => ((await res.json()) as { apiKeys: Array<{ id: string; name: string }> }).apiKeys;

/** `npm run demo` as a user runs it: the built server in a real process. */
describe('npm run demo', () => {
  let database: TestDatabase;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
  });

  afterAll(async () => {
    await server?.stop();
    await database.drop();
  });

  const readKeys = async (): Promise<DemoKeys> => JSON.parse(await readFile(join(database.dataDir, 'demo-keys.json'), 'utf8'));
  const get = (path: string, key: string) => fetch(`${server!.url}${path}`, { headers: { Authorization: `Bearer ${key}` } });
  type SessionItem = { sessionId: string; title: string; status: string; createdAt: number };
  /** Every session of the caller's organization, paging to the end. */
  const allSessions = async (key: string): Promise<SessionItem[]> => {
    const all: SessionItem[] = [];
    let cursor: string | null = null;
    do {
      const page = (await (await get(`/api/v0/sessions?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, key)).json()) as {
        sessions: SessionItem[];
        pagination: { nextCursor: string | null };
      };
      all.push(...page.sessions);
      cursor = page.pagination.nextCursor;
    } while (cursor);
    return all;
  };
  const startOfToday = () => Date.parse(new Date().toISOString().slice(0, 10));

  it('seeds both organizations and writes working keys before it listens', async () => {
    server = await startServer(['--demo'], database.env);
    const keys = await readKeys();
    expect(Object.keys(keys.acme).sort()).toEqual(['guest', 'manager', 'member', 'orgId', 'owner']);
    expect(Object.keys(keys.globex).sort()).toEqual(['member', 'orgId', 'owner']);
    for (const org of ['acme', 'globex']) {
      for (const [role, key] of Object.entries(keys[org]).filter(([role]) => role !== 'orgId')) {
        const res = await get('/settings/api-keys', key);
        expect([org, role, res.status]).toEqual([org, role, 200]);
      }
    }
    expect(await keysOf(await get('/settings/api-keys?scope=organization', keys.acme.owner))).toHaveLength(4);
    expect((await get('/settings/api-keys?scope=organization', keys.acme.member)).status).toBe(403);
    expect((await get('/healthz', '')).status).toBe(200);
  });

  it('gives the demo organizations realistic conversations to look at', async () => {
    const keys = await readKeys();
    const sessions = (await allSessions(keys.acme.owner)).filter((s) => s.createdAt >= startOfToday());
    // Today's four conversations, and the managed demo computer's provisioning log (the rest is history).
    expect(sessions.map((s) => s.status).sort()).toEqual(['idle', 'idle', 'idle', 'pending', 'running']);
    expect(sessions.filter((s) => s.title.startsWith('Provisioning log'))).toHaveLength(1);
    const finished = sessions.find((s) => s.title === 'Fix the flaky CI build')!;
    const { messages } = (await (await get(`/api/v0/sessions/${finished.sessionId}/messages`, keys.acme.owner)).json()) as {
      messages: Array<{ role: string; content: Array<{ type: string }> }>;
    };
    const blockTypes = new Set(messages.flatMap((m) => m.content.map((block) => block.type)));
    for (const type of ['text', 'image', 'thinking', 'tool_use', 'tool_result']) expect(blockTypes).toContain(type);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'system', 'assistant']);
    const globex = (await (await get('/api/v0/sessions', keys.globex.owner)).json()) as { sessions: unknown[] };
    expect(globex.sessions).toHaveLength(1);
  });

  it('gives acme a BYOM computer and a managed one that provisions, with working agent tokens', async () => {
    const keys = await readKeys();
    const list = async () => ((await (await get('/api/v0/computers', keys.acme.owner)).json()) as { computers: Array<{ name: string; providerType: string; status: string }> }).computers;
    const deadline = Date.now() + 30_000;
    while ((await list()).some((c) => c.status === 'provisioning') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await list()).map((c) => [c.name, c.providerType, c.status]).sort()).toEqual([
      ["Mia's workspace", 'local', 'active'],
      ["Olivia's laptop", 'byom', 'active'],
    ]);
    const tokens = JSON.parse(await readFile(join(database.dataDir, 'demo-agent-tokens.json'), 'utf8')) as Record<string, string>;
    const claim = await fetch(`${server!.url}/api/v0/agent/claims`, { method: 'POST', headers: { Authorization: `Bearer ${tokens["Olivia's laptop"]}` } });
    expect(claim.status).toBe(200);
  });

  it('gives acme a history of enterprise control changes by two admins, its custom model key masked', async () => {
    const keys = await readKeys();
    const res = await get('/api/v0/organization/enterprise-controls/history', keys.acme.manager);
    expect(res.status).toBe(200);
    const { changes } = (await res.json()) as { changes: Array<{ revision: number; user: { email: string }; settings: Record<string, unknown> }> };
    expect(changes.map((c) => c.revision)).toEqual([4, 3, 2, 1]);
    expect(new Set(changes.map((c) => c.user.email))).toEqual(new Set(['olivia.owner@acme.example', 'max.manager@acme.example']));
    expect(changes[0].settings).toMatchObject({ sessionRetentionDays: 365, restrictApiKeyCreationToManagers: true, customModels: [{ id: 'custom:acme-llama', apiKey: '****7d2e' }] });
    const globex = (await (await get('/api/v0/organization/enterprise-controls/history', keys.globex.owner)).json()) as { changes: unknown[] };
    expect(globex.changes).toEqual([]);
  });

  it('gives acme readiness reports for three repositories over time, and an organization level', async () => {
    const keys = await readKeys();
    const repositories = (await (await get('/api/organization/readiness-repositories', keys.acme.member)).json()) as { repositories: Array<{ repoUrl: string; reports: number; level: number }> };
    expect(repositories.repositories.map((r) => [r.repoUrl, r.reports]).sort()).toEqual([
      ['https://github.com/acme/payments-api', 3],
      ['https://github.com/acme/web-app.git', 2],
      ['ssh://git@github.com/acme/infra.git', 1],
    ]);
    const reports = (await (await get('/api/organization/maturity-level-reports?limit=100', keys.acme.member)).json()) as { reports: Array<{ createdAt: number }> };
    expect(reports.reports).toHaveLength(6);
    const times = reports.reports.map((r) => r.createdAt);
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(times[0] - times[times.length - 1]).toBeGreaterThan(50 * 86_400_000);
    const level = (await (await get('/api/organization/maturity-level', keys.acme.member)).json()) as { level: number; repositories: number };
    expect(level).toMatchObject({ repositories: 3, level: Math.floor(repositories.repositories.reduce((sum, r) => sum + r.level, 0) / 3) });
  });

  let sessionsAfterFirstRun = 0;

  it('gives acme about 60 days of history, rolled up into the analytics endpoints', async () => {
    const keys = await readKeys();
    const sessions = await allSessions(keys.acme.owner);
    sessionsAfterFirstRun = sessions.length;
    const past = sessions.filter((s) => s.createdAt < startOfToday());
    expect(past.length).toBeGreaterThan(100);
    const day = (daysAgo: number) => new Date(startOfToday() - daysAgo * 86_400_000).toISOString().slice(0, 10);
    expect(new Date(Math.min(...past.map((s) => s.createdAt))).toISOString().slice(0, 10) >= day(60)).toBe(true);
    const range = `startDate=${day(60)}&endDate=${day(1)}`;
    const body = async (path: string) => ((await (await get(`/api/v1/analytics/${path}`, keys.acme.manager)).json()) as { data: Array<Record<string, number>> }).data;
    const activity = await body(`activity?${range}`);
    expect(activity).toHaveLength(60);
    expect(activity.filter((row) => row.daily_active_users > 0).length).toBeGreaterThan(40);
    expect(activity.reduce((sum, row) => sum + row.sessions, 0)).toBe(past.length);
    expect(Math.max(...activity.map((row) => row.monthly_active_users))).toBe(4);
    const tools = await body(`tools?${range}`);
    expect(tools.reduce((sum, row) => sum + row.tool_calls, 0)).toBeGreaterThan(500);
    const productivity = await body(`productivity?${range}`);
    expect(productivity.reduce((sum, row) => sum + row.git_commits, 0)).toBeGreaterThan(0);
    const tokens = await body(`tokens?${range}`);
    expect(tokens.reduce((sum, row) => sum + row.billable_tokens, 0)).toBeGreaterThan(1_000_000);
    const users = (await (await get(`/api/v1/analytics/users?${range}&limit=100`, keys.acme.owner)).json()) as { data: Array<{ user_id: string }> };
    expect(new Set(users.data.map((row) => row.user_id)).size).toBe(4);
  });

  it('stops cleanly on SIGTERM', async () => {
    expect(await server!.stop()).toBe(0);
    expect(server!.output()).toMatch(/closing the database/);
  });

  it('a second run on the same data changes nothing', async () => {
    const before = await readKeys();
    server = await startServer(['--demo'], database.env);
    expect(await readKeys()).toEqual(before);
    expect(await keysOf(await get('/settings/api-keys?scope=organization', before.acme.owner))).toHaveLength(4);
    expect(await keysOf(await get('/settings/api-keys?scope=organization', before.globex.owner))).toHaveLength(2);
    expect(await allSessions(before.acme.owner)).toHaveLength(sessionsAfterFirstRun);
    const { computers } = (await (await get('/api/v0/computers', before.acme.owner)).json()) as { computers: unknown[] };
    expect(computers).toHaveLength(2);
    const { changes } = (await (await get('/api/v0/organization/enterprise-controls/history', before.acme.owner)).json()) as { changes: unknown[] };
    expect(changes).toHaveLength(4);
    const { reports } = (await (await get('/api/organization/maturity-level-reports?limit=100', before.acme.owner)).json()) as { reports: unknown[] };
    expect(reports).toHaveLength(6);
  });

  it('keeps acme and globex apart', async () => {
    const keys = await readKeys();
    const acmeKeys = await keysOf(await get('/settings/api-keys?scope=organization', keys.acme.owner));
    const res = await fetch(`${server!.url}/settings/api-keys/${acmeKeys[0].id}`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${keys.globex.owner}` },
    });
    expect(res.status).toBe(404);
    expect((await get('/settings/api-keys', keys.acme.owner)).status).toBe(200);
  });
});

describe('start-up', () => {
  it('starts on an empty data directory and again on the existing one, keeping the data', async () => {
    const database = await createTestDatabase();
    // On PGlite, a folder with nothing in it: the server creates and migrates the database itself.
    const env = serverUrl() ? database.env : { DATA_DIR: join(database.dataDir, 'fresh') };
    try {
      const first = await startServer(['--demo'], env);
      if (!serverUrl()) expect(first.output()).toMatch(/Applied migrations/);
      const key = JSON.parse(await readFile(join(env.DATA_DIR, 'demo-keys.json'), 'utf8')).globex.member;
      const created = await fetch(`${first.url}/settings/api-keys`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'survives restarts' }),
      });
      expect(created.status).toBe(201);
      expect(await first.stop()).toBe(0);

      const second = await startServer([], env);
      expect(second.output()).not.toMatch(/Applied migrations/);
      const listed = await keysOf(await fetch(`${second.url}/settings/api-keys`, { headers: { Authorization: `Bearer ${key}` } }));
      expect(listed.map((k) => k.name)).toContain('survives restarts');
      expect(await second.stop()).toBe(0);
    } finally {
      await database.drop();
    }
  });

  it('refuses a bad configuration with a message naming the variable', async () => {
    const result = await runNode('dist/main.js', [], { PORT: 'eighty', DATA_DIR: '/nonexistent-never-created' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('PORT');
  });
});
