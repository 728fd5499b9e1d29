import Ajv from 'ajv';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';
import { runNode, ServerProcess, setUpFirstOwner, startServer } from '../utils/processes';

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

  type Block = { type: string; text?: string; content?: string | Block[]; source?: { type: string; mediaType: string; data: string } };
  type Message = { role: string; content: Block[]; hookEventName?: string; hookStatus?: string };
  const messagesOf = async (sessionId: string, key: string) =>
    ((await (await get(`/api/v0/sessions/${sessionId}/messages?limit=100`, key)).json()) as { messages: Message[] }).messages;

  it('gives the demo organizations realistic conversations with every kind of content block, as the API publishes them', async () => {
    const keys = await readKeys();
    const sessions = (await allSessions(keys.acme.owner)).filter((s) => s.createdAt >= startOfToday());
    // Today's conversations (one routed to a computer whose agent is not running), and the managed computers' provisioning logs (the rest is history).
    expect(sessions.map((s) => s.title).sort()).toEqual([
      'Add pagination to the orders API',
      'Bump the Node version on the build server',
      'Explore the analytics module',
      'Fix the flaky CI build',
      'Invoice PDFs render blank',
      'Provisioning log: Legacy monolith',
      "Provisioning log: Mia's workspace",
      'Upgrade the payment SDK to v5',
    ]);
    const status = Object.fromEntries(sessions.map((s) => [s.title, s.status]));
    expect(status).toMatchObject({
      'Fix the flaky CI build': 'idle',
      'Invoice PDFs render blank': 'idle',
      'Upgrade the payment SDK to v5': 'running',
      'Add pagination to the orders API': 'pending',
    });

    // Every message of today's conversations is a Message as the API's own document describes it.
    const doc = (await (await fetch(`${server!.url}/docs-json`)).json()) as Record<string, unknown>;
    // Without Ajv's `discriminator` option, which refuses the document's explicit `mapping`: `oneOf` picks the same branch.
    const ajv = new Ajv({ strict: false });
    ajv.addSchema({ ...doc, $id: 'openapi' });
    const validMessage = ajv.compile({ $ref: 'openapi#/components/schemas/Message' });
    const all: Message[] = [];
    for (const session of sessions) {
      for (const message of await messagesOf(session.sessionId, keys.acme.owner)) {
        validMessage(message);
        expect([session.title, validMessage.errors ?? []]).toEqual([session.title, []]);
        all.push(message);
      }
    }
    const blocks = all.flatMap((m) => m.content.flatMap((block) => [block, ...(Array.isArray(block.content) ? block.content : [])]));
    // Every content block type the spec defines, and both document sources.
    expect(new Set(blocks.map((b) => b.type))).toEqual(new Set(['text', 'image', 'thinking', 'redacted_thinking', 'tool_use', 'tool_result', 'document']));
    expect(new Set(blocks.filter((b) => b.type === 'document').map((b) => b.source!.type))).toEqual(new Set(['base64', 'text']));
    expect(blocks.some((b) => b.type === 'tool_result' && (b as { isError?: boolean }).isError === true)).toBe(true);
    expect(blocks.some((b) => b.type === 'tool_result' && Array.isArray(b.content) && b.content.some((inner) => inner.type === 'image'))).toBe(true);
    // Hook runs that completed and one that failed.
    expect(new Set(all.filter((m) => m.hookEventName).map((m) => `${m.hookEventName}:${m.hookStatus}`))).toEqual(
      new Set(['PostToolUse:completed', 'PreToolUse:error', 'Stop:completed']),
    );
    // Images are real PNGs bigger than a pixel.
    for (const image of blocks.filter((b) => b.type === 'image')) {
      const png = Buffer.from(image.source!.data, 'base64');
      expect(png.subarray(1, 4).toString()).toBe('PNG');
    }
    expect(blocks.filter((b) => b.type === 'image').some((b) => Buffer.from(b.source!.data, 'base64').readUInt32BE(16) > 1)).toBe(true);

    const finished = sessions.find((s) => s.title === 'Fix the flaky CI build')!;
    expect((await messagesOf(finished.sessionId, keys.acme.owner)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'system', 'assistant']);
    const globex = (await (await get('/api/v0/sessions', keys.globex.owner)).json()) as { sessions: unknown[] };
    expect(globex.sessions).toHaveLength(1);
  });

  it('shows the dead ends: work no agent will take says why', async () => {
    const keys = await readKeys();
    const sessions = (await allSessions(keys.acme.owner)) as Array<SessionItem & { statusReason?: { code: string; message: string } }>;
    const reasons = Object.fromEntries(sessions.filter((s) => s.statusReason).map((s) => [s.title, s.statusReason!.code]));
    expect(reasons).toEqual({
      'Bump the Node version on the build server': 'no_agent_for_computer',
      'Add pagination to the orders API': 'no_agent_for_organization',
    });
  });

  it('gives acme computers in every status with their steps: connected, never connected, provisioned for real, failed with a reason', async () => {
    const keys = await readKeys();
    type Computer = {
      id: string;
      name: string;
      providerType: string;
      status: string;
      hostname?: string;
      provisioningSteps?: Array<{ id: string; status: string; error?: string; startedAt?: number; completedAt?: number }>;
    };
    const list = async () => ((await (await get('/api/v0/computers', keys.acme.owner)).json()) as { computers: Computer[] }).computers;
    const deadline = Date.now() + 30_000;
    while ((await list()).some((c) => c.status === 'provisioning') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    const computers = Object.fromEntries((await list()).map((c) => [c.name, c]));
    expect(
      Object.values(computers)
        .map((c) => [c.name, c.providerType, c.status])
        .sort(),
    ).toEqual([
      ['Build server', 'byom', 'active'],
      ['Legacy monolith', 'local', 'error'],
      ["Mia's workspace", 'local', 'active'],
      ["Olivia's laptop", 'byom', 'active'],
    ]);
    expect(computers["Olivia's laptop"].hostname).toBe('olivia-mbp.acme.example');
    expect(computers['Build server'].hostname).toBeUndefined();
    expect(computers["Mia's workspace"].provisioningSteps!.map((step) => [step.id, step.status])).toEqual([['create-computer', 'completed']]);
    const failed = computers['Legacy monolith'].provisioningSteps!;
    expect(failed.map((step) => [step.id, step.status])).toEqual([
      ['create-computer', 'completed'],
      ['clone-repos', 'failed'],
      ['install-dependencies', 'pending'],
    ]);
    expect(failed[1].error).toMatch(/Repository not found/);
    expect(failed[1].startedAt! < failed[1].completedAt!).toBe(true);
    expect(Date.now() - failed[0].startedAt!).toBeGreaterThan(2 * 86_400_000);
    // Its provisioning log tells the same story.
    const full = (await (await get(`/api/v0/computers/${computers['Legacy monolith'].id}`, keys.acme.owner)).json()) as {
      provisioningSteps: Array<{ installSessionId: string }>;
    };
    const log = await messagesOf(full.provisioningSteps[0].installSessionId, keys.acme.owner);
    expect(log.map((m) => m.content[0].text).join('\n')).toMatch(/create-computer completed[\s\S]*clone-repos failed: git clone failed/);
    // Nothing provisions it behind the user's back: still in error a moment later.
    expect((await list()).find((c) => c.name === 'Legacy monolith')!.status).toBe('error');

    const tokens = JSON.parse(await readFile(join(database.dataDir, 'demo-agent-tokens.json'), 'utf8')) as Record<string, string>;
    expect(Object.keys(tokens).sort()).toEqual(['Build server', "Mia's workspace", "Olivia's laptop"]);
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
    expect(changes[0].settings).toMatchObject({
      sessionRetentionDays: 365,
      restrictApiKeyCreationToManagers: true,
      customModels: [{ id: 'custom:acme-llama', apiKey: '****7d2e' }],
    });
    const globex = (await (await get('/api/v0/organization/enterprise-controls/history', keys.globex.owner)).json()) as { changes: unknown[] };
    expect(globex.changes).toEqual([]);
  });

  it('gives acme readiness reports made by the evaluator: three repositories over time, and this project as it is now', async () => {
    const keys = await readKeys();
    const repositories = (await (await get('/api/organization/readiness-repositories', keys.acme.member)).json()) as {
      repositories: Array<{ repoUrl: string; reports: number; level: number }>;
    };
    // This project is evaluated where the server runs from (a clone: its origin, else its folder).
    const ownUrl = repositories.repositories.map((r) => r.repoUrl).find((url) => !url.includes('/acme/'));
    expect(ownUrl).toBeDefined();
    expect(repositories.repositories.map((r) => [r.repoUrl, r.reports]).sort()).toEqual(
      [
        ['https://github.com/acme/payments-api', 3],
        ['https://github.com/acme/web-app.git', 2],
        ['ssh://git@github.com/acme/infra.git', 1],
        [ownUrl, 1],
      ].sort(),
    );
    const reports = (await (await get('/api/organization/maturity-level-reports?limit=100', keys.acme.member)).json()) as {
      reports: Array<{ createdAt: number; repoUrl: string; commitHash?: string; report: Record<string, { rationale: string }> }>;
    };
    expect(reports.reports).toHaveLength(7);
    const times = reports.reports.map((r) => r.createdAt);
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(times[0] - times[times.length - 1]).toBeGreaterThan(50 * 86_400_000);
    // The newest is this project's, with the evaluator's own findings about it.
    expect(reports.reports[0]).toMatchObject({ repoUrl: ownUrl, commitHash: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect(reports.reports[0].report.readme.rationale).toMatch(/README\.md found/);
    expect(reports.reports[0].report.integration_tests.rationale).toMatch(/e2e-spec/);
    const level = (await (await get('/api/organization/maturity-level', keys.acme.member)).json()) as { level: number; repositories: number };
    expect(level).toMatchObject({ repositories: 4, level: Math.floor(repositories.repositories.reduce((sum, r) => sum + r.level, 0) / 4) });
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
    const body = async (path: string) =>
      ((await (await get(`/api/v1/analytics/${path}`, keys.acme.manager)).json()) as { data: Array<Record<string, number>> }).data;
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
    expect(computers).toHaveLength(4);
    const { changes } = (await (await get('/api/v0/organization/enterprise-controls/history', before.acme.owner)).json()) as { changes: unknown[] };
    expect(changes).toHaveLength(4);
    const { reports } = (await (await get('/api/organization/maturity-level-reports?limit=100', before.acme.owner)).json()) as { reports: unknown[] };
    expect(reports).toHaveLength(7);
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
      // No demo seed here: that is the describe above; this is the bare first start an operator meets.
      const first = await startServer([], { ...env, LOCAL_AGENTS: 'off' });
      if (!serverUrl()) expect(first.output()).toMatch(/Applied migrations/);
      const key = await setUpFirstOwner(first);
      const created = await fetch(`${first.url}/settings/api-keys`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'survives restarts' }),
      });
      expect(created.status).toBe(201);
      expect(await first.stop()).toBe(0);

      const second = await startServer([], { ...env, LOCAL_AGENTS: 'off' });
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
