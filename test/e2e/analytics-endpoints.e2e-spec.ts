import Ajv, { ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Role } from '../../src/modules/auth';
import { HistoryImportService, MessageRole, PastSession } from '../../src/modules/sessions';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;

/**
 * The five analytics read endpoints and the owner's rollup trigger, over real HTTP, on data written
 * only through the fact pipeline (the history importer, which records facts like live traffic):
 * a small scenario with every value computed by hand, a larger seeded one checked against an
 * independent count and against the invariants that tie the endpoints together.
 */

// --- dates -------------------------------------------------------------------------------------

const DAY_MS = 86_400_000;
/** Fixed once, so a run crossing midnight UTC keeps its days. */
const NOW = Date.now();
const day = (daysAgo: number) => new Date(NOW - daysAgo * DAY_MS).toISOString().slice(0, 10);
/** `daysAgo` days ago at hh:mm UTC. */
const at = (daysAgo: number, hh = 12, mm = 0) => new Date(Date.parse(`${day(daysAgo)}T00:00:00Z`) + (hh * 60 + mm) * 60_000);
const daysOf = (from: number, to: number) => Array.from({ length: from - to + 1 }, (_, i) => day(from - i));
const D1 = day(1);
const D2 = day(2);
const D3 = day(3);
const D4 = day(4);
const D5 = day(5);
const D6 = day(6);

// --- messages as the importer takes them -------------------------------------------------------

type PastMessage = PastSession['messages'][number];
type Block = PastMessage['content'][number];
let toolSeq = 0;
const tool = (name: string, input: Json = {}): Block => ({ type: 'tool_use', id: `tu-${++toolSeq}`, name, input });
const said = (when: Date, text: string, source: string, authorId?: string): PastMessage => ({
  role: MessageRole.User,
  content: [{ type: 'text', text }],
  createdAt: when,
  userMessageSource: source,
  ...(authorId ? { authorId } : {}),
});
const agent = (when: Date, model: string, ...tools: Block[]): PastMessage => ({
  role: MessageRole.Assistant,
  content: [{ type: 'text', text: 'Working on it.' }, ...tools],
  attributes: { modelId: model },
  createdAt: when,
});
const hook = (when: Date, event: string, matcher: string | undefined, ...commands: string[]): PastMessage => ({
  role: MessageRole.System,
  content: [{ type: 'text', text: 'hook ran' }],
  attributes: { hookEventName: event, ...(matcher === undefined ? {} : { hookMatcher: matcher }), hookCommands: commands.map((command) => ({ type: 'command', command, timeout: 30 })) },
  createdAt: when,
});
interface Tokens {
  input: number;
  output: number;
  cacheWrite?: number;
  cacheRead?: number;
  thinking?: number;
}
const usage = (model: string, when: Date, u: Tokens): PastSession['usage'][number] => ({
  model,
  at: when,
  usage: { inputTokens: u.input, outputTokens: u.output, cacheCreationTokens: u.cacheWrite ?? 0, cacheReadTokens: u.cacheRead ?? 0, thinkingTokens: u.thinking ?? 0 },
});

type Settings = PastSession['settings'];
const HIGH: Settings = { autonomyLevel: 'high', interactionMode: 'auto' };
const MEDIUM: Settings = { autonomyLevel: 'medium', interactionMode: 'auto' };
const LOW: Settings = { autonomyLevel: 'low', interactionMode: 'auto' };
const OFF: Settings = { autonomyLevel: 'off', interactionMode: 'auto' };
const SPEC_MEDIUM: Settings = { autonomyLevel: 'medium', interactionMode: 'spec' };
const ASK_HIGH: Settings = { autonomyLevel: 'high', interactionMode: 'ask' };

// --- small arithmetic the definitions use ------------------------------------------------------

const round2 = (value: number) => Math.round(value * 100) / 100;
const nearestRank = (sorted: number[], p: number) => (sorted.length === 0 ? 0 : sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]);
const billable = (u: Required<Tokens>) => u.input + u.output + u.thinking + Math.floor((125 * u.cacheWrite + 10 * u.cacheRead) / 100);
const sum = (rows: Json[], pick: (row: Json) => number) => rows.reduce((total, row) => total + pick(row), 0);
const byDate = (rows: Json[], date: string) => rows.filter((row) => row.date === date);

// --- a deterministic PRNG for the generated organization ---------------------------------------

type Rng = () => number;
function mulberry32(seed: number): Rng {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296;
  };
}
const pick = <T>(r: Rng, items: readonly T[]): T => items[Math.floor(r() * items.length)];
const int = (r: Rng, min: number, max: number) => min + Math.floor(r() * (max - min + 1));

/** What the generated organization did, counted straight from the sessions it imports (no rollup logic). */
interface Oracle {
  users: Set<string>;
  sessions: Map<string, number>;
  userMessages: Map<string, number>;
  assistantMessages: Map<string, number>;
  toolCalls: Map<string, number>;
  sessionsWithMessages: Map<string, Set<number>>;
  /** day → user → clients */
  active: Map<string, Map<string, Set<string>>>;
  /** `day|user|model` → tokens */
  tokens: Map<string, Required<Tokens>>;
}

const CLIENT_OF: Record<string, string> = { cli_tui: 'terminal-ui', cli_acp: 'terminal-ui', web: 'web', desktop: 'web' };
const CLIENTS = ['terminal-ui', 'web', 'non-interactive-cli'];
const SOURCES = ['cli_tui', 'cli_acp', 'web', 'desktop', 'cli_exec', 'sessions_api', 'automation', 'api'];
const GENERATED_SETTINGS: Settings[] = [HIGH, MEDIUM, LOW, OFF, SPEC_MEDIUM, ASK_HIGH, { autonomyLevel: 'low', interactionMode: 'spec' }, {}];
const FILES = ['src/a.ts', 'lib/b.py', 'Dockerfile', 'scripts/run', 'web/c.tsx', 'Makefile', 'app/D.Py'];
const MODELS = ['model-a', 'model-b', 'model-c'];
/** 20 days ending 17 days ago: the 30-day window of the last rows starts inside them, so its edge matters. */
const GENERATED_DAYS = { from: 36, to: 17 };
/** How often each user is active (by user index): from busy to rare, so the window edges change the counts. */
const ACTIVITY_RATES = [0.7, 0.45, 0.25, 0.1, 0.04];

/**
 * 25 users over 20 days: each user is active on a day at their own rate (0.7 down to 0.04), with one or two
 * sessions of one to three turns (sometimes typed by a colleague, sometimes running past
 * midnight), tools from a pool with MCP servers in several cases and parsing artifacts, hooks,
 * token usage on three models (thinking on some), and now and then a session without messages.
 */
function generate(seed: number, org: string, userIds: string[]): { sessions: PastSession[]; oracle: Oracle } {
  const r = mulberry32(seed);
  const oracle: Oracle = {
    users: new Set(),
    sessions: new Map(),
    userMessages: new Map(),
    assistantMessages: new Map(),
    toolCalls: new Map(),
    sessionsWithMessages: new Map(),
    active: new Map(),
    tokens: new Map(),
  };
  const bump = (map: Map<string, number>, key: string, n = 1) => map.set(key, (map.get(key) ?? 0) + n);
  const toolPool: Array<() => Block> = [
    () => tool('Read', { file_path: pick(r, FILES) }),
    () => tool('Grep', { pattern: 'todo' }),
    () => tool('Edit', { file_path: pick(r, FILES) }),
    () => tool('Write', { file_path: pick(r, FILES) }),
    () => tool('MultiEdit', { file_path: pick(r, FILES) }),
    () => tool('Bash', { command: pick(r, ['npm test', 'git commit -am wip', 'git add . && git commit -m a && gh pr create --fill', 'ls -la']) }),
    () => tool(pick(r, ['mcp__GitHub__search', 'mcp__github__search', 'mcp__GITHUB__get_issue', 'mcp__Linear__list', 'mcp__linear__create_pull_request']), {}),
    () => tool('Skill', { skill: pick(r, ['pdf', 'xlsx']) }),
    () => tool(pick(r, ['"Read"', 'Edit\n', '[Glob]']), { file_path: 'src/a.ts' }),
  ];
  const sessions: PastSession[] = [];
  for (let d = GENERATED_DAYS.from; d >= GENERATED_DAYS.to; d--) {
    for (const [u, owner] of userIds.entries()) {
      if (r() >= ACTIVITY_RATES[u % ACTIVITY_RATES.length]) continue;
      const count = r() < 0.3 ? 2 : 1;
      for (let s = 0; s < count; s++) {
        const index = sessions.length;
        const createdAt = at(d, 8 + s * 5, int(r, 0, 50));
        oracle.users.add(owner);
        bump(oracle.sessions, day(d));
        const messages: PastMessage[] = [];
        const reports: PastSession['usage'] = [];
        const turns = r() < 0.05 ? 0 : int(r, 1, 3);
        let clock = createdAt.getTime();
        const spill = turns > 1 && r() < 0.2;
        for (let turn = 0; turn < turns; turn++) {
          if (spill && turn === turns - 1) clock = at(d - 1, 0, 30).getTime();
          const when = () => new Date((clock += 60_000));
          const author = r() < 0.1 ? pick(r, userIds) : owner;
          const source = pick(r, SOURCES);
          const userAt = when();
          const text = r() < 0.2 ? pick(r, ['/review', '/compact now', '/Fix:all']) : 'please continue';
          messages.push(said(userAt, text, source, author === owner ? undefined : author));
          const userDay = userAt.toISOString().slice(0, 10);
          oracle.users.add(author);
          bump(oracle.userMessages, userDay);
          const activeDay = oracle.active.get(userDay) ?? oracle.active.set(userDay, new Map()).get(userDay)!;
          (activeDay.get(author) ?? activeDay.set(author, new Set()).get(author)!).add(CLIENT_OF[source] ?? 'non-interactive-cli');
          (oracle.sessionsWithMessages.get(userDay) ?? oracle.sessionsWithMessages.set(userDay, new Set()).get(userDay)!).add(index);
          const tools = Array.from({ length: int(r, 0, 4) }, () => pick(r, toolPool)());
          const model = pick(r, MODELS);
          const agentAt = when();
          messages.push(agent(agentAt, model, ...tools));
          bump(oracle.assistantMessages, userDay);
          bump(oracle.toolCalls, userDay, tools.length);
          if (r() < 0.2) messages.push(hook(when(), pick(r, ['PostToolUse', 'Stop']), pick(r, [undefined, 'Edit', 'Bash']), ...pick(r, [['npm test'], ['npm test', 'npm run lint']])));
          if (r() < 0.8) {
            const tokens = { input: int(r, 0, 5000), output: int(r, 0, 2000), cacheWrite: int(r, 0, 999), cacheRead: int(r, 0, 9999), thinking: r() < 0.3 ? int(r, 1, 3000) : 0 };
            reports.push(usage(model, agentAt, tokens));
            const key = `${userDay}|${owner}|${model}`;
            const sofar = oracle.tokens.get(key) ?? { input: 0, output: 0, cacheWrite: 0, cacheRead: 0, thinking: 0 };
            oracle.tokens.set(key, {
              input: sofar.input + tokens.input,
              output: sofar.output + tokens.output,
              cacheWrite: sofar.cacheWrite + tokens.cacheWrite,
              cacheRead: sofar.cacheRead + tokens.cacheRead,
              thinking: sofar.thinking + tokens.thinking,
            });
          }
        }
        sessions.push({ organizationId: org, ownerId: owner, title: `generated ${index}`, settings: pick(r, GENERATED_SETTINGS), createdAt, messages, usage: reports });
      }
    }
  }
  return { sessions, oracle };
}

// --- the suite ---------------------------------------------------------------------------------

const BASE = '/api/v1/analytics';
const ENDPOINTS = ['tokens', 'tools', 'activity', 'productivity', 'users'] as const;
type Endpoint = (typeof ENDPOINTS)[number];
const REFERENCE_SCHEMA: Record<Endpoint, string> = {
  tokens: 'TokenUsageResponse',
  tools: 'ToolUsageResponse',
  activity: 'ActivityResponse',
  productivity: 'ProductivityResponse',
  users: 'UsersResponse',
};
const GROUP_BY: Partial<Record<Endpoint, string>> = { tokens: 'model', tools: 'tool_name', activity: 'client' };

describe('Analytics endpoints', () => {
  let t: TestApp;
  let owner: TestUser; // O
  let manager: TestUser; // M
  let member: TestUser; // B
  let outsider: TestUser; // owner of another organization, active on the same days
  let ours: Record<Endpoint | 'rollup', ValidateFunction>;
  let reference: Record<Endpoint, ValidateFunction>;
  let firstRollup: Json;
  let outsiderRollup: Json;

  const importSession = (user: TestUser, settings: Settings, createdAt: Date, messages: PastMessage[], reports: PastSession['usage'] = []) =>
    t.app.get(HistoryImportService).importSession({ organizationId: user.organizationId, ownerId: user.userId, title: 'imported', settings, createdAt, messages, usage: reports });

  function expectValid(validate: ValidateFunction, body: unknown, what: string) {
    validate(body);
    expect({ what, errors: validate.errors ?? [] }).toEqual({ what, errors: [] });
  }

  /** GET an endpoint as `user`: answers 200 and validates against our published schema and the reference's. */
  async function get(user: TestUser, endpoint: Endpoint, query: Record<string, string | number>): Promise<Json> {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
    const res = await t.http().get(`${BASE}/${endpoint}?${qs}`).set(user.auth);
    expect({ status: res.status, body: res.status === 200 ? undefined : res.body }).toEqual({ status: 200, body: undefined });
    expectValid(ours[endpoint], res.body, `ours ${endpoint}?${qs}`);
    expectValid(reference[endpoint], res.body, `reference ${endpoint}?${qs}`);
    return res.body as Json;
  }
  const range = (start: string, end: string, extra: Record<string, string | number> = {}) => ({ startDate: start, endDate: end, ...extra });

  async function rollUp(user: TestUser): Promise<Json> {
    const res = await t.http().post(`${BASE}/rollup`).set(user.auth);
    expect({ status: res.status, body: res.status === 200 ? undefined : res.body }).toEqual({ status: 200, body: undefined });
    expectValid(ours.rollup, res.body, 'ours rollup');
    return res.body as Json;
  }

  /** Every user page of a range with `limit`, in order. */
  async function pages(user: TestUser, start: string, end: string, limit: number): Promise<Json[]> {
    const bodies: Json[] = [];
    let cursor: string | undefined;
    do {
      const body = await get(user, 'users', range(start, end, { limit, ...(cursor ? { cursor } : {}) }));
      bodies.push(body);
      cursor = body.meta.has_more ? body.meta.next_cursor : undefined;
      expect(bodies.length).toBeLessThanOrEqual(200);
    } while (cursor);
    return bodies;
  }

  /** Every body an organization's owner can read for a range (for before/after comparisons). */
  async function everything(user: TestUser, start: string, end: string): Promise<Json> {
    const out: Json = {};
    for (const endpoint of ENDPOINTS) {
      out[endpoint] = endpoint === 'users' ? await pages(user, start, end, 100) : await get(user, endpoint, range(start, end));
      if (GROUP_BY[endpoint]) out[`${endpoint}:grouped`] = await get(user, endpoint, range(start, end, { group_by: GROUP_BY[endpoint]! }));
    }
    return out;
  }

  beforeAll(async () => {
    // A rollup interval longer than the suite: only the start-up run and our own calls roll up.
    t = await startTestApp({ ANALYTICS_ROLLUP_MS: '3600000' });
    const doc = (await t.http().get('/docs-json').expect(200)).body as Json;
    const refDoc = JSON.parse(readFileSync(join(__dirname, '../reference/analytics-api.openapi.json'), 'utf8')) as Json;
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addFormat('date', /^\d{4}-\d{2}-\d{2}$/);
    ajv.addSchema({ ...doc, $id: 'openapi' });
    ajv.addSchema({ ...refDoc, $id: 'reference' });
    const ok = (path: string, method: 'get' | 'post') => {
      expect(doc.paths[path]?.[method]?.responses?.['200']?.content?.['application/json']?.schema).toBeDefined();
      return ajv.compile({ $ref: `openapi#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}/responses/200/content/application~1json/schema` });
    };
    ours = {
      tokens: ok(`${BASE}/tokens`, 'get'),
      tools: ok(`${BASE}/tools`, 'get'),
      activity: ok(`${BASE}/activity`, 'get'),
      productivity: ok(`${BASE}/productivity`, 'get'),
      users: ok(`${BASE}/users`, 'get'),
      rollup: ok(`${BASE}/rollup`, 'post'),
    };
    reference = Object.fromEntries(ENDPOINTS.map((e) => [e, ajv.compile({ $ref: `reference#/components/schemas/${REFERENCE_SCHEMA[e]}` })])) as Record<Endpoint, ValidateFunction>;

    const org = await createOrganization(t);
    owner = await createUser(t, Role.Owner, org);
    manager = await createUser(t, Role.Manager, org);
    member = await createUser(t, Role.Member, org);
    const [O, M, B] = [owner, manager, member];

    // ---- 5 days ago: three users, three clients -------------------------------------------------
    await importSession(O, HIGH, at(5, 12), [
      said(at(5, 12, 1), '/review now', 'cli_tui'),
      agent(
        at(5, 12, 2),
        'model-a',
        tool('Edit', { file_path: 'src/app.ts', old_string: 'a', new_string: 'b' }),
        tool('Bash', { command: 'git add -A && git commit -m "wip" && gh pr create --fill' }),
        tool('mcp__GitHub__search', { q: 'bug' }),
      ),
      hook(at(5, 12, 3), 'PostToolUse', 'Edit', 'npm test', 'npm run lint'),
      said(at(5, 12, 4), 'thanks', 'cli_tui'),
      agent(at(5, 12, 5), 'model-a', tool('Write', { file_path: 'Dockerfile', content: 'FROM node' }), tool('mcp__github__create_issue', { title: 'x' })),
    ], [usage('model-a', at(5, 12, 5), { input: 1000, output: 200, cacheWrite: 400, cacheRead: 5000 })]);
    await importSession(M, SPEC_MEDIUM, at(5, 13), [
      said(at(5, 13, 1), 'Plan the refactor', 'web'),
      agent(at(5, 13, 2), 'model-b', tool('"Read"', { file_path: 'a.py' }), tool('Edit\n', { file_path: 'src/util.py' }), tool('Skill', { skill: 'pdf' })),
      said(at(5, 13, 3), '/compact', 'desktop'),
      agent(at(5, 13, 4), 'model-b', tool('MultiEdit', { file_path: 'scripts/run', edits: [] })),
    ], [usage('model-b', at(5, 13, 4), { input: 300, output: 100, thinking: 50, cacheRead: 1001 })]);
    await importSession(B, LOW, at(5, 14), [
      said(at(5, 14, 1), 'run the tests', 'cli_exec'),
      agent(at(5, 14, 2), 'model-a', tool('Bash', { command: 'npm test' })),
      said(at(5, 14, 3), 'again', 'cli_exec'),
      agent(at(5, 14, 4), 'model-a', tool('Bash', { command: 'npm test' }), tool('Grep', { pattern: 'fail' })),
    ], [usage('model-a', at(5, 14, 4), { input: 10, output: 5 })]);

    // ---- 4 days ago: quiet -----------------------------------------------------------------------

    // ---- 3 days ago: autonomy off, ask mode, a session that goes on 2 days ago --------------------
    await importSession(O, OFF, at(3, 12), [
      said(at(3, 12, 1), 'status?', 'sessions_api'),
      agent(at(3, 12, 2), 'model-a', tool('Read', { file_path: 'x.ts' })),
    ], [usage('model-a', at(3, 12, 2), { input: 100, output: 20 })]);
    await importSession(M, ASK_HIGH, at(3, 12, 30), [
      said(at(3, 12, 31), '/review:deep please', 'cli_tui'),
      agent(
        at(3, 12, 32),
        'model-b',
        tool('Bash', { command: 'git -C repo commit -m "a" && git commit --amend --no-edit' }),
        tool('Write', { file_path: 'lib/Main.PY' }),
        tool('mcp__Linear__list_issues', {}),
      ),
      said(at(3, 12, 33), 'ok', 'cli_tui'),
      said(at(3, 12, 34), 'go on', 'cli_tui'),
    ], [usage('model-b', at(3, 12, 32), { input: 40, output: 10 }), usage('model-a', at(3, 12, 34), { input: 50, output: 10 })]);
    await importSession(B, MEDIUM, at(3, 13), [
      said(at(3, 13, 1), 'hello', 'web'),
      agent(
        at(3, 13, 2),
        'model-a',
        tool('Glob', { pattern: '*.ts' }),
        tool('Glob', { pattern: '*.py' }),
        tool('Grep', { pattern: 'x' }),
        tool('Read', { file_path: 'src/a.ts' }),
        tool('Edit', { file_path: 'src/a.ts' }),
        tool('Edit', { file_path: 'src/b.ts' }),
        tool('Skill', { skill: 'pdf' }),
      ),
      said(at(3, 13, 3), 'more', 'web'),
      said(at(3, 13, 4), 'and more', 'web'),
      hook(at(3, 13, 5), 'Stop', undefined, 'say done'),
      said(at(2, 9, 0), '/compact', 'web'),
      agent(at(2, 9, 1), 'model-a', tool('Edit', { file_path: 'src/a.ts' })),
    ]);

    // ---- 2 days ago: the owner on two clients, a colleague typing in the owner's session, a manager
    // who only starts a session ----------------------------------------------------------------------
    await importSession(O, HIGH, at(2, 12), [
      said(at(2, 12, 1), 'start', 'cli_tui'),
      agent(at(2, 12, 2), 'model-b', tool('Bash', { command: 'gh pr create --title x' }), tool('mcp__GitHub__create_pull_request', { title: 'x' })),
      said(at(2, 12, 3), 'from the browser', 'web'),
      said(at(2, 12, 4), 'I have a question', 'desktop', B.userId),
      agent(at(2, 12, 5), 'model-b', tool('Edit', { file_path: 'Makefile' })),
      hook(at(2, 12, 6), 'PostToolUse', 'Edit', 'npm test'),
    ], [usage('model-b', at(2, 12, 5), { input: 200, output: 100, cacheWrite: 80, thinking: 300 })]);
    await importSession(M, LOW, at(2, 15), []);

    // ---- another organization on the same days, with names found nowhere else ---------------------
    outsider = await createUser(t, Role.Owner, await createOrganization(t), 'outsider-marker@example.test');
    for (const d of [5, 3, 2]) {
      await importSession(outsider, HIGH, at(d, 11), [
        said(at(d, 11, 1), '/outsiderCommand', 'web'),
        agent(at(d, 11, 2), 'model-outsider', tool('OutsiderTool', {}), tool('mcp__OutsiderServer__x', {}), tool('Skill', { skill: 'outsider-skill' }), tool('Write', { file_path: 'x.rb' })),
        hook(at(d, 11, 3), 'PostToolUse', 'OutsiderTool', 'outsider-hook'),
      ], [usage('model-outsider', at(d, 11, 2), { input: 77_777, output: 7 })]);
    }

    firstRollup = await rollUp(owner);
    outsiderRollup = await rollUp(outsider);
  });

  afterAll(() => t?.close());

  // ---- expected rows of the scenario, by hand ------------------------------------------------

  const quietTools = (date: string) => ({
    date,
    tool_calls: 0,
    by_tool: [],
    mcp_users_with_mcp: 0,
    mcp_by_server: [],
    skills_invocations: 0,
    skills_by_name: [],
    slash_commands_invocations: 0,
    slash_commands_by_name: [],
    hooks_invocations: 0,
    hooks_by_event: [],
    web_users: 0,
    autonomy_ratio_avg: 0,
    autonomy_ratio_p50: 0,
    autonomy_ratio_p90: 0,
    tool_calls_per_session_avg: 0,
    user_turns_per_session_avg: 0,
    tool_autonomy_level_ratio: { auto_high: 0, auto_medium: 0, auto_low: 0, manual: 0 },
  });
  const quietProductivity = (date: string) => ({ date, files_created: 0, files_edited: 0, by_extension: [], by_language: [], git_commits: 0, git_prs_created: 0 });
  const quietTokens = (date: string) => ({ date, billable_tokens: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, by_model: [], by_user: [] });

  describe('POST /rollup', () => {
    it('rolled up exactly the organization\'s days with facts, in order, and a second call rolls up nothing', async () => {
      expect(firstRollup).toEqual({ data: { rolled_up_days: [D5, D3, D2] }, meta: { org_id: owner.organizationId } });
      expect(outsiderRollup).toEqual({ data: { rolled_up_days: [D5, D3, D2] }, meta: { org_id: outsider.organizationId } });
      // Facts come from the event log's listener: one written by a transaction still below the rollup's watermark
      // (another listener's overlapped it) makes its day roll up again, the same. Never another day.
      const second = await rollUp(owner);
      expect(second).toEqual({ data: { rolled_up_days: expect.any(Array) }, meta: { org_id: owner.organizationId } });
      expect(second.data.rolled_up_days.filter((day: string) => ![D5, D3, D2].includes(day))).toEqual([]);
    });

    it('is for owners only: a manager gets 403', async () => {
      const res = await t.http().post(`${BASE}/rollup`).set(manager.auth);
      expect(res.status).toBe(403);
    });
  });

  describe('GET /tokens', () => {
    it('answers every day of the range with exact totals, by model and by user', async () => {
      const body = await get(manager, 'tokens', range(D6, D1));
      expect(body.meta).toEqual({ org_id: owner.organizationId, start_date: D6, end_date: D1 });
      const [O, M, B] = [owner, manager, member];
      expect(body.data).toEqual([
        quietTokens(D6),
        {
          // O model-a: 1000 + 200 + floor((125*400 + 10*5000)/100) = 2200; B model-a: 10 + 5 = 15;
          // M model-b: 300 + (100 + 50 thinking) + floor(10*1001/100) = 550, tier thinking.
          date: D5,
          billable_tokens: 2765,
          input_tokens: 1310,
          output_tokens: 355,
          cache_read_tokens: 6001,
          cache_write_tokens: 400,
          by_model: [
            { model_id: 'model-a', model_tier: 'standard', billable_tokens: 2215, input_tokens: 1010, output_tokens: 205 },
            { model_id: 'model-b', model_tier: 'thinking', billable_tokens: 550, input_tokens: 300, output_tokens: 150 },
          ],
          by_user: [
            { user_id: O.userId, user_email: O.email, billable_tokens: 2200, by_model: [{ model_id: 'model-a', model_tier: 'standard', billable_tokens: 2200, input_tokens: 1000, output_tokens: 200 }] },
            { user_id: M.userId, user_email: M.email, billable_tokens: 550, by_model: [{ model_id: 'model-b', model_tier: 'thinking', billable_tokens: 550, input_tokens: 300, output_tokens: 150 }] },
            { user_id: B.userId, user_email: B.email, billable_tokens: 15, by_model: [{ model_id: 'model-a', model_tier: 'standard', billable_tokens: 15, input_tokens: 10, output_tokens: 5 }] },
          ],
        },
        quietTokens(D4),
        {
          // O model-a 100 + 20 = 120; M model-a 50 + 10 = 60 and model-b 40 + 10 = 50.
          date: D3,
          billable_tokens: 230,
          input_tokens: 190,
          output_tokens: 40,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          by_model: [
            { model_id: 'model-a', model_tier: 'standard', billable_tokens: 180, input_tokens: 150, output_tokens: 30 },
            { model_id: 'model-b', model_tier: 'standard', billable_tokens: 50, input_tokens: 40, output_tokens: 10 },
          ],
          by_user: [
            { user_id: O.userId, user_email: O.email, billable_tokens: 120, by_model: [{ model_id: 'model-a', model_tier: 'standard', billable_tokens: 120, input_tokens: 100, output_tokens: 20 }] },
            {
              user_id: M.userId,
              user_email: M.email,
              billable_tokens: 110,
              by_model: [
                { model_id: 'model-a', model_tier: 'standard', billable_tokens: 60, input_tokens: 50, output_tokens: 10 },
                { model_id: 'model-b', model_tier: 'standard', billable_tokens: 50, input_tokens: 40, output_tokens: 10 },
              ],
            },
          ],
        },
        {
          // O model-b: 200 + (100 + 300 thinking) + floor(125*80/100) = 700, tier thinking.
          date: D2,
          billable_tokens: 700,
          input_tokens: 200,
          output_tokens: 400,
          cache_read_tokens: 0,
          cache_write_tokens: 80,
          by_model: [{ model_id: 'model-b', model_tier: 'thinking', billable_tokens: 700, input_tokens: 200, output_tokens: 400 }],
          by_user: [{ user_id: O.userId, user_email: O.email, billable_tokens: 700, by_model: [{ model_id: 'model-b', model_tier: 'thinking', billable_tokens: 700, input_tokens: 200, output_tokens: 400 }] }],
        },
        quietTokens(D1),
      ]);
    });

    it('group_by=model flattens by_model into rows of the days models were used', async () => {
      const body = await get(owner, 'tokens', range(D6, D1, { group_by: 'model' }));
      expect(body.data).toEqual([
        { date: D5, group_key: 'model-a', billable_tokens: 2215, input_tokens: 1010, output_tokens: 205 },
        { date: D5, group_key: 'model-b', billable_tokens: 550, input_tokens: 300, output_tokens: 150 },
        { date: D3, group_key: 'model-a', billable_tokens: 180, input_tokens: 150, output_tokens: 30 },
        { date: D3, group_key: 'model-b', billable_tokens: 50, input_tokens: 40, output_tokens: 10 },
        { date: D2, group_key: 'model-b', billable_tokens: 700, input_tokens: 200, output_tokens: 400 },
      ]);
    });
  });

  describe('GET /tools', () => {
    it('answers every day with exact tool, MCP, skill, command, hook and autonomy figures', async () => {
      const body = await get(manager, 'tools', range(D6, D1));
      expect(body.meta).toEqual({ org_id: owner.organizationId, start_date: D6, end_date: D1 });
      expect(body.data).toEqual([
        quietTools(D6),
        {
          // O: Edit, Bash, mcp__GitHub__search, Write, mcp__github__create_issue (5, auto_high) over 2 turns;
          // M: "Read", Edit\n, Skill, MultiEdit (4, spec mode at medium = auto_medium) over 2 turns;
          // B: Bash, Bash, Grep (3, auto_low) over 2 turns. Ratios 1.5, 2, 2.5: avg 2, p50 rank 2 = 2, p90 rank 3 = 2.5.
          date: D5,
          tool_calls: 12,
          by_tool: [
            { tool: 'Bash', invocations: 3 },
            { tool: 'Edit', invocations: 2 },
            { tool: 'Grep', invocations: 1 },
            { tool: 'MultiEdit', invocations: 1 },
            { tool: 'Read', invocations: 1 },
            { tool: 'Skill', invocations: 1 },
            { tool: 'Write', invocations: 1 },
            { tool: 'mcp__github__create_issue', invocations: 1 },
            { tool: 'mcp__github__search', invocations: 1 },
          ],
          mcp_users_with_mcp: 1,
          mcp_by_server: [{ server: 'github', invocations: 2 }],
          skills_invocations: 1,
          skills_by_name: [{ name: 'pdf', count: 1 }],
          slash_commands_invocations: 2,
          slash_commands_by_name: [
            { name: '/compact', count: 1 },
            { name: '/review', count: 1 },
          ],
          hooks_invocations: 2,
          hooks_by_event: [
            { event: 'PostToolUse', matcher: 'Edit', command: 'npm run lint', count: 1 },
            { event: 'PostToolUse', matcher: 'Edit', command: 'npm test', count: 1 },
          ],
          web_users: 1,
          autonomy_ratio_avg: 2,
          autonomy_ratio_p50: 2,
          autonomy_ratio_p90: 2.5,
          // 12 tool calls and 6 turns over 3 sessions with messages.
          tool_calls_per_session_avg: 4,
          user_turns_per_session_avg: 2,
          // 5/12 = 0.4167, 4/12 = 0.3333, 3/12.
          tool_autonomy_level_ratio: { auto_high: 0.42, auto_medium: 0.33, auto_low: 0.25, manual: 0 },
        },
        quietTools(D4),
        {
          // O: Read (autonomy off = manual) over 1 turn; M: Bash, Write, mcp__Linear__list_issues (ask mode = manual)
          // over 3 turns; B: Glob x2, Grep, Read, Edit x2, Skill (auto_medium) over 3 turns.
          // Ratios 1, 1, 7/3: avg 4.333/3 = 1.444, p50 rank 2 = 1, p90 rank 3 = 2.33.
          date: D3,
          tool_calls: 11,
          by_tool: [
            { tool: 'Edit', invocations: 2 },
            { tool: 'Glob', invocations: 2 },
            { tool: 'Read', invocations: 2 },
            { tool: 'Bash', invocations: 1 },
            { tool: 'Grep', invocations: 1 },
            { tool: 'Skill', invocations: 1 },
            { tool: 'Write', invocations: 1 },
            { tool: 'mcp__linear__list_issues', invocations: 1 },
          ],
          mcp_users_with_mcp: 1,
          mcp_by_server: [{ server: 'linear', invocations: 1 }],
          skills_invocations: 1,
          skills_by_name: [{ name: 'pdf', count: 1 }],
          slash_commands_invocations: 1,
          slash_commands_by_name: [{ name: '/review:deep', count: 1 }],
          hooks_invocations: 1,
          hooks_by_event: [{ event: 'Stop', matcher: '', command: 'say done', count: 1 }],
          web_users: 1,
          autonomy_ratio_avg: 1.44,
          autonomy_ratio_p50: 1,
          autonomy_ratio_p90: 2.33,
          // 11 calls / 3 sessions = 3.667; 7 turns / 3 = 2.333.
          tool_calls_per_session_avg: 3.67,
          user_turns_per_session_avg: 2.33,
          // manual 4/11 = 0.364, auto_medium 7/11 = 0.636.
          tool_autonomy_level_ratio: { auto_high: 0, auto_medium: 0.64, auto_low: 0, manual: 0.36 },
        },
        {
          // O: Bash, mcp__GitHub__create_pull_request, Edit (auto_high) over 2 turns (terminal and web);
          // B: one turn in O's session (no tool calls of B's: the agent's work is the owner's) and one in B's own
          // session from 3 days ago with an Edit (auto_medium). Ratios 0.5, 1.5: avg 1, p50 rank 1 = 0.5, p90 rank 2 = 1.5.
          // M only started a session: no turn, no ratio. Sessions with messages: O's and B's = 2.
          date: D2,
          tool_calls: 4,
          by_tool: [
            { tool: 'Edit', invocations: 2 },
            { tool: 'Bash', invocations: 1 },
            { tool: 'mcp__github__create_pull_request', invocations: 1 },
          ],
          mcp_users_with_mcp: 1,
          mcp_by_server: [{ server: 'github', invocations: 1 }],
          skills_invocations: 0,
          skills_by_name: [],
          slash_commands_invocations: 1,
          slash_commands_by_name: [{ name: '/compact', count: 1 }],
          hooks_invocations: 1,
          hooks_by_event: [{ event: 'PostToolUse', matcher: 'Edit', command: 'npm test', count: 1 }],
          web_users: 2,
          autonomy_ratio_avg: 1,
          autonomy_ratio_p50: 0.5,
          autonomy_ratio_p90: 1.5,
          tool_calls_per_session_avg: 2,
          user_turns_per_session_avg: 2,
          tool_autonomy_level_ratio: { auto_high: 0.75, auto_medium: 0.25, auto_low: 0, manual: 0 },
        },
        quietTools(D1),
      ]);
    });

    it('group_by=tool_name flattens by_tool into rows of the days tools were used', async () => {
      const body = await get(owner, 'tools', range(D6, D1, { group_by: 'tool_name' }));
      const row = (date: string, group_key: string, tool_calls: number) => ({ date, group_key, tool_calls });
      expect(body.data).toEqual([
        row(D5, 'Bash', 3),
        row(D5, 'Edit', 2),
        row(D5, 'Grep', 1),
        row(D5, 'MultiEdit', 1),
        row(D5, 'Read', 1),
        row(D5, 'Skill', 1),
        row(D5, 'Write', 1),
        row(D5, 'mcp__github__create_issue', 1),
        row(D5, 'mcp__github__search', 1),
        row(D3, 'Edit', 2),
        row(D3, 'Glob', 2),
        row(D3, 'Read', 2),
        row(D3, 'Bash', 1),
        row(D3, 'Grep', 1),
        row(D3, 'Skill', 1),
        row(D3, 'Write', 1),
        row(D3, 'mcp__linear__list_issues', 1),
        row(D2, 'Edit', 2),
        row(D2, 'Bash', 1),
        row(D2, 'mcp__github__create_pull_request', 1),
      ]);
    });
  });

  describe('GET /activity', () => {
    it('answers every day with DAU/WAU/MAU, clients, sessions and messages', async () => {
      const body = await get(manager, 'activity', range(D6, D1));
      expect(body.meta).toEqual({ org_id: owner.organizationId, start_date: D6, end_date: D1 });
      const clients = (tui: number, web: number, cli: number) => ({ 'terminal-ui': tui, web, 'non-interactive-cli': cli });
      expect(body.data).toEqual([
        { date: D6, daily_active_users: 0, weekly_active_users: 0, monthly_active_users: 0, daily_active_users_by_client: clients(0, 0, 0), sessions: 0, messages: 0, user_messages: 0 },
        // O cli_tui, M web + desktop (both web), B cli_exec; 6 turns + 6 agent messages; 3 sessions.
        { date: D5, daily_active_users: 3, weekly_active_users: 3, monthly_active_users: 3, daily_active_users_by_client: clients(1, 1, 1), sessions: 3, messages: 12, user_messages: 6 },
        // Quiet, but the three users of 5 days ago are inside the 7- and 30-day windows.
        { date: D4, daily_active_users: 0, weekly_active_users: 3, monthly_active_users: 3, daily_active_users_by_client: clients(0, 0, 0), sessions: 0, messages: 0, user_messages: 0 },
        // O sessions_api, M cli_tui, B web; turns 1 + 3 + 3, agent messages 1 + 1 + 1.
        { date: D3, daily_active_users: 3, weekly_active_users: 3, monthly_active_users: 3, daily_active_users_by_client: clients(1, 1, 1), sessions: 3, messages: 10, user_messages: 7 },
        // O on cli_tui and web (counted once in DAU, in both clients), B on desktop and web; M only started a
        // session (counted in sessions, not active). Turns 2 + 2, agent messages 2 + 1.
        { date: D2, daily_active_users: 2, weekly_active_users: 3, monthly_active_users: 3, daily_active_users_by_client: clients(1, 2, 0), sessions: 2, messages: 7, user_messages: 4 },
        { date: D1, daily_active_users: 0, weekly_active_users: 3, monthly_active_users: 3, daily_active_users_by_client: clients(0, 0, 0), sessions: 0, messages: 0, user_messages: 0 },
      ]);
    });

    it('group_by=client has a row per client with active users that day', async () => {
      const body = await get(owner, 'activity', range(D6, D1, { group_by: 'client' }));
      const row = (date: string, group_key: string, daily_active_users: number) => ({ date, group_key, daily_active_users });
      expect(body.data).toEqual([
        row(D5, 'terminal-ui', 1),
        row(D5, 'web', 1),
        row(D5, 'non-interactive-cli', 1),
        row(D3, 'terminal-ui', 1),
        row(D3, 'web', 1),
        row(D3, 'non-interactive-cli', 1),
        row(D2, 'terminal-ui', 1),
        row(D2, 'web', 2),
      ]);
    });

    it('counts the weekly and monthly windows across days before the range', async () => {
      // A range after the activity: WAU holds until 7 days after 2 days ago ends, MAU until 30.
      const body = await get(owner, 'activity', range(D1, D1));
      expect(body.data).toEqual([
        { date: D1, daily_active_users: 0, weekly_active_users: 3, monthly_active_users: 3, daily_active_users_by_client: { 'terminal-ui': 0, web: 0, 'non-interactive-cli': 0 }, sessions: 0, messages: 0, user_messages: 0 },
      ]);
    });
  });

  describe('GET /productivity', () => {
    it('answers every day with files by extension and language, commits and pull requests', async () => {
      const body = await get(manager, 'productivity', range(D6, D1));
      expect(body.meta).toEqual({ org_id: owner.organizationId, start_date: D6, end_date: D1 });
      expect(body.data).toEqual([
        quietProductivity(D6),
        {
          // Created: Dockerfile. Edited: src/app.ts, src/util.py (through `Edit\n`), scripts/run (MultiEdit).
          // `git commit` once and `gh pr create` once inside one Bash command.
          date: D5,
          files_created: 1,
          files_edited: 3,
          by_extension: [
            { extension: '(none)', count: 2 },
            { extension: 'py', count: 1 },
            { extension: 'ts', count: 1 },
          ],
          by_language: [
            { language: 'Dockerfile', count: 1 },
            { language: 'Other', count: 1 },
            { language: 'Python', count: 1 },
            { language: 'TypeScript', count: 1 },
          ],
          git_commits: 1,
          git_prs_created: 1,
        },
        quietProductivity(D4),
        {
          // Created lib/Main.PY (extension in lower case); edited src/a.ts and src/b.ts; `git -C repo commit` and `git commit --amend`.
          date: D3,
          files_created: 1,
          files_edited: 2,
          by_extension: [
            { extension: 'ts', count: 2 },
            { extension: 'py', count: 1 },
          ],
          by_language: [
            { language: 'TypeScript', count: 2 },
            { language: 'Python', count: 1 },
          ],
          git_commits: 2,
          git_prs_created: 0,
        },
        {
          // Edited Makefile (a Linguist file name) and src/a.ts; PRs: `gh pr create` and an MCP create_pull_request.
          date: D2,
          files_created: 0,
          files_edited: 2,
          by_extension: [
            { extension: '(none)', count: 1 },
            { extension: 'ts', count: 1 },
          ],
          by_language: [
            { language: 'Makefile', count: 1 },
            { language: 'TypeScript', count: 1 },
          ],
          git_commits: 0,
          git_prs_created: 2,
        },
        quietProductivity(D1),
      ]);
    });
  });

  describe('GET /users', () => {
    const zero = {
      tool_calls: 0,
      billable_tokens: 0,
      files_created: 0,
      files_edited: 0,
      git_commits: 0,
      git_prs_created: 0,
      mcp_calls: 0,
      skill_calls: 0,
      slash_commands: 0,
      hooks: 0,
      sessions: 0,
      messages: 0,
      user_messages: 0,
      assistant_messages: 0,
      autonomy_ratio: 0,
      languages: [],
    };
    const expectedRows = () => {
      const [O, M, B] = [owner, manager, member];
      const row = (user: TestUser, date: string, metrics: Json) => ({ user_id: user.userId, user_email: user.email, date, ...zero, ...metrics });
      const rows = [
        row(O, D5, {
          // 5 tool calls over 2 turns; Edit ts, Write Dockerfile; 2 MCP calls (GitHub, github); 2 hook commands.
          tool_calls: 5, billable_tokens: 2200, primary_model: 'model-a', primary_model_tier: 'standard',
          files_created: 1, files_edited: 1, git_commits: 1, git_prs_created: 1, mcp_calls: 2, slash_commands: 1, hooks: 2,
          sessions: 1, messages: 4, user_messages: 2, assistant_messages: 2, autonomy_ratio: 2.5, delegation_level: 'auto-high',
          languages: ['Dockerfile', 'TypeScript'],
        }),
        row(O, D3, {
          tool_calls: 1, billable_tokens: 120, primary_model: 'model-a', primary_model_tier: 'standard',
          sessions: 1, messages: 2, user_messages: 1, assistant_messages: 1, autonomy_ratio: 1, delegation_level: 'manual',
        }),
        row(O, D2, {
          // The agent's work in O's session is O's, including the answer to B's message.
          tool_calls: 3, billable_tokens: 700, primary_model: 'model-b', primary_model_tier: 'thinking',
          files_edited: 1, git_prs_created: 2, mcp_calls: 1, hooks: 1,
          sessions: 1, messages: 4, user_messages: 2, assistant_messages: 2, autonomy_ratio: 1.5, delegation_level: 'auto-high',
          languages: ['Makefile'],
        }),
        row(M, D5, {
          tool_calls: 4, billable_tokens: 550, primary_model: 'model-b', primary_model_tier: 'thinking',
          files_edited: 2, skill_calls: 1, slash_commands: 1,
          sessions: 1, messages: 4, user_messages: 2, assistant_messages: 2, autonomy_ratio: 2, delegation_level: 'spec',
          languages: ['Other', 'Python'],
        }),
        row(M, D3, {
          // Assistant messages by model-b, but model-a has more billable tokens (60 > 50): primary model-a.
          tool_calls: 3, billable_tokens: 110, primary_model: 'model-a', primary_model_tier: 'standard',
          files_created: 1, git_commits: 2, mcp_calls: 1, slash_commands: 1,
          sessions: 1, messages: 4, user_messages: 3, assistant_messages: 1, autonomy_ratio: 1, delegation_level: 'manual',
          languages: ['Python'],
        }),
        // Only started a session: no model, no turns, no tool calls.
        row(M, D2, { primary_model: 'unknown', primary_model_tier: 'standard', sessions: 1, delegation_level: 'manual' }),
        row(B, D5, {
          tool_calls: 3, billable_tokens: 15, primary_model: 'model-a', primary_model_tier: 'standard',
          sessions: 1, messages: 4, user_messages: 2, assistant_messages: 2, autonomy_ratio: 1.5, delegation_level: 'auto-low',
        }),
        row(B, D3, {
          // No usage: the primary model is the one that wrote B's assistant messages. 7 / 3 = 2.33.
          tool_calls: 7, primary_model: 'model-a', primary_model_tier: 'standard',
          files_edited: 2, skill_calls: 1, hooks: 1,
          sessions: 1, messages: 4, user_messages: 3, assistant_messages: 1, autonomy_ratio: 2.33, delegation_level: 'auto-medium',
          languages: ['TypeScript'],
        }),
        row(B, D2, {
          // A turn in O's session (auto-high) and one in B's own (auto-medium): the tie goes to the more autonomous.
          tool_calls: 1, primary_model: 'model-a', primary_model_tier: 'standard',
          files_edited: 1, slash_commands: 1,
          messages: 3, user_messages: 2, assistant_messages: 1, autonomy_ratio: 0.5, delegation_level: 'auto-high',
          languages: ['TypeScript'],
        }),
      ];
      return rows.sort((a, b) => (a.user_id < b.user_id ? -1 : a.user_id > b.user_id ? 1 : a.date < b.date ? -1 : 1));
    };

    it('answers a row per user and active day, every field exact, in user-id order', async () => {
      const body = await get(manager, 'users', range(D6, D1));
      expect(body.meta).toEqual({ org_id: owner.organizationId, start_date: D6, end_date: D1, has_more: false, next_cursor: null });
      expect(body.data).toEqual(expectedRows());
    });

    it('pages with limit 1: one user per page, next_cursor the page\'s last user id, null on the last page', async () => {
      const ids = [owner.userId, manager.userId, member.userId].sort();
      const bodies = await pages(owner, D6, D1, 1);
      expect(bodies.map((b) => b.meta)).toEqual(
        ids.map((id, i) => ({ org_id: owner.organizationId, start_date: D6, end_date: D1, has_more: i < 2, next_cursor: i < 2 ? id : null })),
      );
      expect(bodies.map((b) => [...new Set(b.data.map((row: Json) => row.user_id))])).toEqual(ids.map((id) => [id]));
      expect(bodies.flatMap((b) => b.data)).toEqual(expectedRows());
    });

    it('answers only the days a user has facts: a range of one quiet day has no rows', async () => {
      const body = await get(owner, 'users', range(D4, D4));
      expect(body).toEqual({ data: [], meta: { org_id: owner.organizationId, start_date: D4, end_date: D4, has_more: false, next_cursor: null } });
    });
  });

  describe('dates', () => {
    it.each(ENDPOINTS)('%s: a range ending before 2026-01-14 answers no rows', async (endpoint) => {
      const body = await get(owner, endpoint, range('2025-12-01', '2026-01-13'));
      const meta = { org_id: owner.organizationId, start_date: '2025-12-01', end_date: '2026-01-13' };
      expect(body).toEqual({ data: [], meta: endpoint === 'users' ? { ...meta, has_more: false, next_cursor: null } : meta });
      if (GROUP_BY[endpoint]) expect((await get(owner, endpoint, range('2025-12-01', '2026-01-13', { group_by: GROUP_BY[endpoint]! }))).data).toEqual([]);
    });

    it('a range straddling 2026-01-14 starts its rows there', async () => {
      for (const endpoint of ['tokens', 'tools', 'activity', 'productivity'] as const) {
        const body = await get(owner, endpoint, range('2026-01-10', '2026-01-16'));
        expect(body.data.map((row: Json) => row.date)).toEqual(['2026-01-14', '2026-01-15', '2026-01-16']);
      }
    });

    it('a quiet stretch answers zero rows for every day, and no users', async () => {
      const days = daysOf(40, 35);
      expect((await get(owner, 'tokens', range(days[0], days[5]))).data).toEqual(days.map(quietTokens));
      expect((await get(owner, 'tools', range(days[0], days[5]))).data).toEqual(days.map(quietTools));
      expect((await get(owner, 'productivity', range(days[0], days[5]))).data).toEqual(days.map(quietProductivity));
      expect((await get(owner, 'activity', range(days[0], days[5]))).data).toEqual(
        days.map((date) => ({ date, daily_active_users: 0, weekly_active_users: 0, monthly_active_users: 0, daily_active_users_by_client: { 'terminal-ui': 0, web: 0, 'non-interactive-cli': 0 }, sessions: 0, messages: 0, user_messages: 0 })),
      );
      expect((await get(owner, 'users', range(days[0], days[5]))).data).toEqual([]);
      for (const endpoint of ['tokens', 'tools', 'activity'] as const) {
        expect((await get(owner, endpoint, range(days[0], days[5], { group_by: GROUP_BY[endpoint]! }))).data).toEqual([]);
      }
    });
  });

  describe('invariants', () => {
    let generatedOwner: TestUser;
    let generatedIds: string[];
    let oracle: Oracle;
    const G_START = day(GENERATED_DAYS.from + 3);
    const G_END = D1;

    beforeAll(async () => {
      const org = await createOrganization(t);
      generatedOwner = await createUser(t, Role.Owner, org);
      const others = [];
      for (let i = 0; i < 24; i++) others.push(await createUser(t, i < 2 ? Role.Manager : Role.Member, org));
      generatedIds = [generatedOwner, ...others].map((u) => u.userId);
      const generated = generate(20260114, org.id, generatedIds);
      oracle = generated.oracle;
      for (const session of generated.sessions) await t.app.get(HistoryImportService).importSession(session);
      const rolled = await rollUp(generatedOwner);
      expect(rolled.data.rolled_up_days).toEqual([...new Set(generated.sessions.flatMap((s) => [s.createdAt, ...s.messages.map((m) => m.createdAt)]).map((d) => d.toISOString().slice(0, 10)))].sort());
    }, 300_000);

    /**
     * The relations between the endpoints, for any organization and range: grouped rows sum to the
     * totals, nested breakdowns to their counts, DAU ≤ WAU ≤ MAU, and each day's users rows to the
     * day's totals on the other endpoints.
     */
    async function checkInvariants(user: TestUser, start: string, end: string) {
      const q = range(start, end);
      const [tokens, tokensGrouped, tools, toolsGrouped, activity, activityGrouped, productivity] = [
        await get(user, 'tokens', q),
        await get(user, 'tokens', range(start, end, { group_by: 'model' })),
        await get(user, 'tools', q),
        await get(user, 'tools', range(start, end, { group_by: 'tool_name' })),
        await get(user, 'activity', q),
        await get(user, 'activity', range(start, end, { group_by: 'client' })),
        await get(user, 'productivity', q),
      ];
      const users = (await pages(user, start, end, 100)).flatMap((b) => b.data as Json[]);
      const days = tokens.data.map((row: Json) => row.date);
      for (const data of [tools.data, activity.data, productivity.data]) expect(data.map((row: Json) => row.date)).toEqual(days);

      for (const [i, date] of (days as string[]).entries()) {
        const tk = tokens.data[i];
        const tl = tools.data[i];
        const ac = activity.data[i];
        const pr = productivity.data[i];
        const us = byDate(users, date);
        // Tokens: grouped rows, by_model and by_user sum to the totals.
        for (const field of ['billable_tokens', 'input_tokens', 'output_tokens']) {
          expect([date, field, sum(byDate(tokensGrouped.data, date), (r) => r[field])]).toEqual([date, field, tk[field]]);
          expect([date, field, sum(tk.by_model, (r) => r[field])]).toEqual([date, field, tk[field]]);
        }
        expect([date, sum(tk.by_user, (r) => r.billable_tokens)]).toEqual([date, tk.billable_tokens]);
        // Tools: grouped rows and by_tool sum to tool_calls; every breakdown sums to its count.
        expect([date, sum(byDate(toolsGrouped.data, date), (r) => r.tool_calls)]).toEqual([date, tl.tool_calls]);
        expect([date, sum(tl.by_tool, (r) => r.invocations)]).toEqual([date, tl.tool_calls]);
        expect([date, sum(tl.skills_by_name, (r) => r.count)]).toEqual([date, tl.skills_invocations]);
        expect([date, sum(tl.slash_commands_by_name, (r) => r.count)]).toEqual([date, tl.slash_commands_invocations]);
        expect([date, sum(tl.hooks_by_event, (r) => r.count)]).toEqual([date, tl.hooks_invocations]);
        const servers = tl.mcp_by_server.map((r: Json) => r.server);
        expect(servers.every((s: string) => s === s.toLowerCase())).toBe(true);
        expect(new Set(servers).size).toBe(servers.length);
        const levels = Object.values(tl.tool_autonomy_level_ratio) as number[];
        if (tl.tool_calls > 0) expect(Math.abs(levels.reduce((a, b) => a + b, 0) - 1)).toBeLessThanOrEqual(0.02);
        else expect(levels).toEqual([0, 0, 0, 0]);
        // Activity: DAU ≤ WAU ≤ MAU; grouped rows sum to the per-client counts; a user counts once in DAU.
        expect(ac.daily_active_users).toBeLessThanOrEqual(ac.weekly_active_users);
        expect(ac.weekly_active_users).toBeLessThanOrEqual(ac.monthly_active_users);
        const byClient = Object.values(ac.daily_active_users_by_client) as number[];
        expect([date, sum(byDate(activityGrouped.data, date), (r) => r.daily_active_users)]).toEqual([date, byClient.reduce((a, b) => a + b, 0)]);
        for (const g of byDate(activityGrouped.data, date)) expect(g.daily_active_users).toBe(ac.daily_active_users_by_client[g.group_key]);
        expect(byClient.every((n) => n <= ac.daily_active_users)).toBe(true);
        expect(ac.daily_active_users).toBeLessThanOrEqual(byClient.reduce((a, b) => a + b, 0));
        expect(tl.web_users).toBe(ac.daily_active_users_by_client.web);
        expect(ac.messages).toBeGreaterThanOrEqual(ac.user_messages);
        // Productivity: breakdowns sum to the files created and edited.
        expect([date, sum(pr.by_extension, (r) => r.count)]).toEqual([date, pr.files_created + pr.files_edited]);
        expect([date, sum(pr.by_language, (r) => r.count)]).toEqual([date, pr.files_created + pr.files_edited]);
        // Users: the day's rows sum to the day's totals everywhere both carry a metric.
        const totals = (field: string) => sum(us, (r) => r[field]);
        expect({
          date,
          tool_calls: totals('tool_calls'),
          billable_tokens: totals('billable_tokens'),
          files_created: totals('files_created'),
          files_edited: totals('files_edited'),
          git_commits: totals('git_commits'),
          git_prs_created: totals('git_prs_created'),
          sessions: totals('sessions'),
          messages: totals('messages'),
          user_messages: totals('user_messages'),
          skill_calls: totals('skill_calls'),
          slash_commands: totals('slash_commands'),
          hooks: totals('hooks'),
          mcp_calls: totals('mcp_calls'),
          mcp_users: us.filter((r) => r.mcp_calls > 0).length,
          active: us.filter((r) => r.user_messages > 0).length,
        }).toEqual({
          date,
          tool_calls: tl.tool_calls,
          billable_tokens: tk.billable_tokens,
          files_created: pr.files_created,
          files_edited: pr.files_edited,
          git_commits: pr.git_commits,
          git_prs_created: pr.git_prs_created,
          sessions: ac.sessions,
          messages: ac.messages,
          user_messages: ac.user_messages,
          skill_calls: tl.skills_invocations,
          slash_commands: tl.slash_commands_invocations,
          hooks: tl.hooks_invocations,
          mcp_calls: sum(tl.mcp_by_server, (r) => r.invocations),
          mcp_users: tl.mcp_users_with_mcp,
          active: ac.daily_active_users,
        });
        // The autonomy figures are those of the users rows with a turn (nearest-rank percentiles, 2 decimals).
        const ratios = us.filter((r) => r.user_messages > 0).map((r) => r.tool_calls / r.user_messages).sort((a, b) => a - b);
        expect({ date, avg: tl.autonomy_ratio_avg, p50: tl.autonomy_ratio_p50, p90: tl.autonomy_ratio_p90 }).toEqual({
          date,
          avg: ratios.length === 0 ? 0 : round2(ratios.reduce((a, b) => a + b, 0) / ratios.length),
          p50: round2(nearestRank(ratios, 50)),
          p90: round2(nearestRank(ratios, 90)),
        });
        for (const r of us) {
          expect(r.autonomy_ratio).toBe(r.user_messages === 0 ? 0 : round2(r.tool_calls / r.user_messages));
          expect(r.messages).toBe(r.user_messages + r.assistant_messages);
        }
      }
      return { tokens, tools, activity, productivity, users };
    }

    it('hold on the hand-built scenario', async () => {
      await checkInvariants(owner, D6, D1);
    });

    it('hold on the generated organization (25 users, 20 days), whose totals match an independent count', async () => {
      const { tokens, tools, activity, users } = await checkInvariants(generatedOwner, G_START, G_END);
      const days = daysOf(GENERATED_DAYS.from + 3, 1);
      expect(tokens.data.map((r: Json) => r.date)).toEqual(days);
      const activeOn = (date: string) => new Set(oracle.active.get(date)?.keys() ?? []);
      const activeWithin = (date: string, window: number) => {
        const ids = new Set<string>();
        for (let i = 0; i < window; i++) for (const id of activeOn(new Date(Date.parse(date) - i * DAY_MS).toISOString().slice(0, 10))) ids.add(id);
        return ids.size;
      };
      for (const [i, date] of days.entries()) {
        const clients = Object.fromEntries(CLIENTS.map((c) => [c, [...(oracle.active.get(date)?.values() ?? [])].filter((set) => set.has(c)).length]));
        expect(activity.data[i]).toEqual({
          date,
          daily_active_users: activeOn(date).size,
          weekly_active_users: activeWithin(date, 7),
          monthly_active_users: activeWithin(date, 30),
          daily_active_users_by_client: clients,
          sessions: oracle.sessions.get(date) ?? 0,
          messages: (oracle.userMessages.get(date) ?? 0) + (oracle.assistantMessages.get(date) ?? 0),
          user_messages: oracle.userMessages.get(date) ?? 0,
        });
        const swm = oracle.sessionsWithMessages.get(date)?.size ?? 0;
        const calls = oracle.toolCalls.get(date) ?? 0;
        expect({ date, tool_calls: tools.data[i].tool_calls, per_session: tools.data[i].tool_calls_per_session_avg, turns: tools.data[i].user_turns_per_session_avg }).toEqual({
          date,
          tool_calls: calls,
          per_session: swm === 0 ? 0 : round2(calls / swm),
          turns: swm === 0 ? 0 : round2((oracle.userMessages.get(date) ?? 0) / swm),
        });
        const usageOfDay = [...oracle.tokens.entries()].filter(([key]) => key.startsWith(`${date}|`)).map(([, u]) => u);
        expect({ date, billable: tokens.data[i].billable_tokens, input: tokens.data[i].input_tokens, output: tokens.data[i].output_tokens }).toEqual({
          date,
          billable: usageOfDay.reduce((total, u) => total + billable(u), 0),
          input: usageOfDay.reduce((total, u) => total + u.input, 0),
          output: usageOfDay.reduce((total, u) => total + u.output + u.thinking, 0),
        });
      }
      // The data really is busy enough to mean something.
      expect(sum(tools.data, (r) => r.tool_calls)).toBeGreaterThan(300);
      expect(Math.max(...activity.data.map((r: Json) => r.daily_active_users))).toBeGreaterThan(5);
      expect(new Set(users.map((r) => r.user_id))).toEqual(oracle.users);
    });

    it.each([1, 7, 100])('users paging with limit %i visits every user once, in id order, next_cursor null exactly on the last page', async (limit) => {
      const bodies = await pages(generatedOwner, G_START, G_END, limit);
      const expectedIds = [...oracle.users].sort();
      expect(bodies).toHaveLength(Math.ceil(expectedIds.length / limit));
      const seen: string[] = [];
      for (const [i, body] of bodies.entries()) {
        const last = i === bodies.length - 1;
        const ids: string[] = [...new Set<string>(body.data.map((r: Json) => r.user_id))];
        expect(ids.length).toBe(last ? expectedIds.length - limit * i : limit);
        expect(body.meta).toEqual({ org_id: generatedOwner.organizationId, start_date: G_START, end_date: G_END, has_more: !last, next_cursor: last ? null : ids[ids.length - 1] });
        // Rows by user then date.
        const keys = body.data.map((r: Json) => `${r.user_id}|${r.date}`);
        expect(keys).toEqual([...keys].sort());
        expect(new Set(keys).size).toBe(keys.length);
        seen.push(...ids);
      }
      expect(seen).toEqual(expectedIds);
      const all = bodies.flatMap((b) => b.data);
      const single = (await get(generatedOwner, 'users', range(G_START, G_END, { limit: 100 }))).data;
      expect(all).toEqual(single);
    });

    it('a second rollup rolls up nothing and changes no body', async () => {
      const before = [await everything(owner, D6, D1), await everything(generatedOwner, G_START, G_END)];
      expect((await rollUp(owner)).data.rolled_up_days).toEqual([]);
      expect((await rollUp(generatedOwner)).data.rolled_up_days).toEqual([]);
      const after = [await everything(owner, D6, D1), await everything(generatedOwner, G_START, G_END)];
      expect(after).toEqual(before);
    });

    it('another organization\'s facts on the same days never appear, and it sees only its own', async () => {
      const markers = [outsider.userId, outsider.email, 'OutsiderTool', 'outsiderserver', 'OutsiderServer', 'model-outsider', 'outsider-skill', '/outsiderCommand', 'outsider-hook', 'Ruby', 'rb', '77777', '77784'];
      for (const [user, start, end] of [[owner, D6, D1], [generatedOwner, G_START, G_END]] as const) {
        const text = JSON.stringify(await everything(user, start, end));
        for (const marker of markers) expect([marker, text.includes(`"${marker}"`) || text.includes(`:${marker},`)]).toEqual([marker, false]);
      }
      // The outsider's own view has its rows (so the markers above were there to find) and none of ours.
      const own = await everything(outsider, D6, D1);
      expect(own.tools.data.map((r: Json) => r.tool_calls)).toEqual([0, 4, 0, 4, 4, 0]);
      expect(own.tokens.data.map((r: Json) => r.billable_tokens)).toEqual([0, 77_784, 0, 77_784, 77_784, 0]);
      expect(own.productivity.data[1].by_language).toEqual([{ language: 'Ruby', count: 1 }]);
      expect(own.tools.data[1].mcp_by_server).toEqual([{ server: 'outsiderserver', invocations: 1 }]);
      expect(new Set(own.users.flatMap((b: Json) => b.data.map((r: Json) => r.user_id)))).toEqual(new Set([outsider.userId]));
      expect(JSON.stringify(own)).not.toContain(owner.userId);
      expect(JSON.stringify(own)).not.toContain('model-a');
    });

    it('a late session on a rolled-up day shows up after the next rollup, which rolls up only that day', async () => {
      const before = await everything(owner, D6, D1);
      // The owner, 3 days ago, from the terminal, at autonomy medium: 1 turn, 1 tool call, 2 tokens.
      await importSession(owner, MEDIUM, at(3, 18), [said(at(3, 18, 1), 'late', 'cli_tui'), agent(at(3, 18, 2), 'model-a', tool('Bash', { command: 'ls' }))], [
        usage('model-a', at(3, 18, 2), { input: 1, output: 1 }),
      ]);
      expect((await rollUp(owner)).data.rolled_up_days).toEqual([D3]);
      // At most the same day again (see the first rollup's test), never another.
      expect((await rollUp(owner)).data.rolled_up_days.filter((day: string) => day !== D3)).toEqual([]);
      const after = await everything(owner, D6, D1);
      // Every other day is unchanged.
      const i3 = 3; // D6, D5, D4, D3
      for (const endpoint of ['tokens', 'tools', 'activity', 'productivity'] as const) {
        expect(after[endpoint].data.filter((r: Json) => r.date !== D3)).toEqual(before[endpoint].data.filter((r: Json) => r.date !== D3));
        expect(after[endpoint].data[i3].date).toBe(D3);
      }
      const otherDays = (b: Json[]) => b.flatMap((p) => p.data).filter((r: Json) => r.date !== D3);
      expect(otherDays(after.users)).toEqual(otherDays(before.users));
      // D3 now has the late work.
      expect(after.tokens.data[i3]).toMatchObject({ billable_tokens: 232, input_tokens: 191, output_tokens: 41 });
      expect(after.tools.data[i3]).toMatchObject({ tool_calls: 12, tool_autonomy_level_ratio: { auto_high: 0, auto_medium: 0.67, auto_low: 0, manual: 0.33 } });
      expect(after.tools.data[i3].by_tool[0]).toEqual({ tool: 'Bash', invocations: 2 });
      // O is now on the terminal too: terminal-ui has O and M; still three active users.
      expect(after.activity.data[i3]).toMatchObject({ daily_active_users: 3, daily_active_users_by_client: { 'terminal-ui': 2, web: 1, 'non-interactive-cli': 1 }, sessions: 4, messages: 12, user_messages: 8 });
      const ownerD3 = after.users.flatMap((p: Json) => p.data).find((r: Json) => r.user_id === owner.userId && r.date === D3);
      // Turns at manual (autonomy off) and auto-medium: the tie goes to the more autonomous.
      expect(ownerD3).toMatchObject({ tool_calls: 2, billable_tokens: 122, sessions: 2, user_messages: 2, assistant_messages: 2, autonomy_ratio: 1, delegation_level: 'auto-medium' });
      await checkInvariants(owner, D6, D1);
    });
  });
});
