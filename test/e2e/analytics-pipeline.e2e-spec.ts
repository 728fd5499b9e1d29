import { ACTIVITY_FACTS_LISTENER } from '../../src/modules/analytics/activity-facts.listener';
import { DurableListeners } from '../../src/platform/events';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { AnalyticsRollupService } from '../../src/modules/analytics/analytics-rollup.service';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { serverUrl } from '../utils/test-database';
import { startTestApp, TestApp } from '../utils/test-app';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;

const DAY_MS = 86_400_000;
const today = () => new Date().toISOString().slice(0, 10);
const tomorrow = () => new Date(Date.now() + DAY_MS);

/**
 * The live fact pipeline over real HTTP: activity through the sessions and agent endpoints writes
 * its facts in the same transaction (once, even when retried under an Idempotency-Key), and the
 * rollup folds a closed day into the rows the endpoints serve.
 */
describe('Analytics: facts from live activity', () => {
  let t: TestApp;
  let owner: TestUser;
  let db: DataSource;

  beforeAll(async () => {
    t = await startTestApp();
    db = t.app.get(DataSource);
    owner = await createUser(t, Role.Owner, await createOrganization(t));
  });

  afterAll(() => t.close());

  const post = (path: string, body: object, key?: string) => {
    const req = t.http().post(path).set(owner.auth);
    if (key) void req.set('Idempotency-Key', key);
    return req.send(body);
  };
  /** The facts listener has handled what is committed (it runs after the commit, from the event log). */
  const caughtUp = (organizationId: string) => t.app.get(DurableListeners).catchUp(ACTIVITY_FACTS_LISTENER, organizationId);
  const facts = async () => {
    await caughtUp(owner.organizationId);
    return (await db.query(
      `SELECT kind, client, level, name, detail, command, to_char(day, 'YYYY-MM-DD') AS day FROM analytics_facts WHERE organization_id = $1 ORDER BY id`,
      [owner.organizationId],
    )) as Json[];
  };

  it('records a session, a user message, agent messages with tool calls and hooks, and usage, each once', async () => {
    const session = await post('/api/v0/sessions', { sessionSettings: { autonomyLevel: 'high' } }).expect(201);
    const sessionId = session.body.sessionId as string;
    await post(`/api/v0/sessions/${sessionId}/messages`, { text: '/review please look at the diff' }, 'say-1').expect(200);
    // A retried request (same key) answers the same and records nothing more.
    await post(`/api/v0/sessions/${sessionId}/messages`, { text: '/review please look at the diff' }, 'say-1').expect(200);
    const claim = await post('/api/v0/agent/claims', {}).expect(200);
    const turnId = claim.body.work.turnId as string;
    const append = {
      turnId,
      messages: [
        {
          role: 'assistant',
          modelId: 'model-a',
          content: [
            { type: 'text', text: 'On it.' },
            { type: 'tool_use', id: 't1', name: 'Edit', input: { file_path: 'src/app.ts', old_string: 'a', new_string: 'b' } },
            { type: 'tool_use', id: 't2', name: 'mcp__GitHub__create_pull_request', input: { title: 'Fix' } },
            { type: 'tool_use', id: 't3', name: 'Bash', input: { command: 'git add -A && git commit -m "fix"' } },
          ],
        },
        {
          role: 'system',
          content: [{ type: 'text', text: 'hook ran' }],
          hookEventName: 'PostToolUse',
          hookMatcher: 'Edit',
          hookCommands: [{ command: 'npm run lint' }, { command: 'npm test' }],
        },
      ],
    };
    await post(`/api/v0/agent/sessions/${sessionId}/messages`, append, 'append-1').expect(200);
    await post(`/api/v0/agent/sessions/${sessionId}/messages`, append, 'append-1').expect(200);
    await post(`/api/v0/agent/sessions/${sessionId}/usage`, { turnId, model: 'model-a', inputTokens: 100, outputTokens: 10 }).expect(200);

    const recorded = await facts();
    expect(recorded.map((f) => [f.kind, f.name ?? null, f.detail ?? null])).toEqual([
      ['session', null, null],
      ['user_message', null, null],
      ['slash_command', '/review', null],
      ['assistant_message', 'model-a', null],
      ['tool_call', 'Edit', null],
      ['file_edited', 'ts', 'TypeScript'],
      ['tool_call', 'mcp__github__create_pull_request', 'github'],
      ['git_pr', null, null],
      ['tool_call', 'Bash', null],
      ['git_commit', null, null],
      ['hook', 'PostToolUse', 'Edit'],
      ['hook', 'PostToolUse', 'Edit'],
      ['token_report', 'model-a', null],
    ]);
    expect(recorded[1]).toMatchObject({ client: 'non-interactive-cli', level: 'auto-high' });
    expect(recorded[4]).toMatchObject({ level: 'auto_high' });
    expect(recorded.filter((f) => f.kind === 'hook').map((f) => f.command)).toEqual(['npm run lint', 'npm test']);
    expect(new Set(recorded.map((f) => f.day))).toEqual(new Set([today()]));
  });

  it.each([
    [{ interactionMode: 'spec', autonomyLevel: 'high' }, 'spec'],
    [{ interactionMode: 'ask' }, 'manual'],
    [{ autonomyLevel: 'off' }, 'manual'],
    [{ autonomyLevel: 'medium' }, 'auto-medium'],
    [{}, 'auto-low'],
  ])('stores a user message sent with settings %j at delegation level %s', async (sessionSettings, level) => {
    const other = await createUser(t, Role.Owner, await createOrganization(t));
    const session = await t.http().post('/api/v0/sessions').set(other.auth).send({ sessionSettings }).expect(201);
    await t.http().post(`/api/v0/sessions/${session.body.sessionId}/messages`).set(other.auth).send({ text: 'hello' }).expect(200);
    await caughtUp(other.organizationId);
    const rows = (await db.query(`SELECT kind, level, client, user_id FROM analytics_facts WHERE organization_id = $1 AND kind = 'user_message'`, [
      other.organizationId,
    ])) as Json[];
    expect(rows).toEqual([{ kind: 'user_message', level, client: 'non-interactive-cli', user_id: other.userId }]);
  });

  it('rolls today up once it is closed, idempotently', async () => {
    const rollup = t.app.get(AnalyticsRollupService);
    // Today is still open: nothing is rolled up.
    expect((await rollup.run({ organizationId: owner.organizationId })).days).toEqual([]);
    const first = await rollup.run({ organizationId: owner.organizationId, now: tomorrow() });
    expect(first.days).toEqual([{ organizationId: owner.organizationId, day: today() }]);
    const [stored] = (await db.query(`SELECT tools, activity, productivity FROM analytics_days WHERE organization_id = $1`, [owner.organizationId])) as Json[];
    expect(stored.activity).toEqual({ sessions: 1, messages: 2, user_messages: 1 });
    expect(stored.tools).toMatchObject({
      tool_calls: 3,
      mcp_users_with_mcp: 1,
      mcp_by_server: [{ server: 'github', invocations: 1 }],
      slash_commands_invocations: 1,
      slash_commands_by_name: [{ name: '/review', count: 1 }],
      hooks_invocations: 2,
      autonomy_ratio_avg: 3,
      tool_calls_per_session_avg: 3,
      user_turns_per_session_avg: 1,
      tool_autonomy_level_ratio: { auto_high: 1, auto_medium: 0, auto_low: 0, manual: 0 },
    });
    expect(stored.productivity).toEqual({
      files_created: 0,
      files_edited: 1,
      by_extension: [{ extension: 'ts', count: 1 }],
      by_language: [{ language: 'TypeScript', count: 1 }],
      git_commits: 1,
      git_prs_created: 1,
    });
    const [user] = (await db.query(`SELECT metrics FROM analytics_user_days WHERE organization_id = $1`, [owner.organizationId])) as Json[];
    expect(user.metrics).toMatchObject({ billable_tokens: 110, primary_model: 'model-a', delegation_level: 'auto-high', languages: ['TypeScript'] });
    // The tokens endpoint's row of the day, rolled up with it from the reported usage.
    const [{ tokens }] = (await db.query(`SELECT tokens FROM analytics_days WHERE organization_id = $1`, [owner.organizationId])) as Json[];
    expect(JSON.parse(tokens)).toMatchObject({ billable_tokens: 110, by_user: [{ user_id: owner.userId, billable_tokens: 110 }] });

    // A second run finds nothing new; a late fact for the day makes it roll up again.
    expect((await rollup.run({ organizationId: owner.organizationId, now: tomorrow() })).days).toEqual([]);
    const session = await post('/api/v0/sessions', {}).expect(201);
    expect(session.body.sessionId).toBeDefined();
    await caughtUp(owner.organizationId);
    const again = await rollup.run({ organizationId: owner.organizationId, now: tomorrow() });
    expect(again.days).toEqual([{ organizationId: owner.organizationId, day: today() }]);
    const [after] = (await db.query(`SELECT activity FROM analytics_days WHERE organization_id = $1`, [owner.organizationId])) as Json[];
    expect(after.activity).toEqual({ sessions: 2, messages: 2, user_messages: 1 });
  });

  // Only PostgreSQL runs transactions beside one another (PGlite has one connection).
  (serverUrl() ? it : it.skip)('rolls a day up once when another transaction was open during the look', async () => {
    const rollup = t.app.get(AnalyticsRollupService);
    await rollup.run({ now: tomorrow() });
    // Another client's transaction, begun before the fact and still open when the rollup looks: the look's xmin.
    const other = new Client({ connectionString: t.database.env.DATABASE_URL });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_current_xact_id()');
      await post('/api/v0/sessions', {}).expect(201);
      await caughtUp(owner.organizationId);
      expect((await rollup.run({ organizationId: owner.organizationId, now: tomorrow() })).days).toEqual([
        { organizationId: owner.organizationId, day: today() },
      ]);
      await other.query('COMMIT');
    } finally {
      await other.end();
    }
    // The fact was seen by that look: the next one must not mark its day again.
    expect((await rollup.run({ organizationId: owner.organizationId, now: tomorrow() })).days).toEqual([]);
  });
});
