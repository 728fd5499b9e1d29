import Ajv from 'ajv';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { HistoryImportService, PastSession } from '../../src/modules/sessions/history-import.service';
import { MessageRole } from '../../src/modules/sessions/domain/message';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;

const BASE = '/api/v1/analytics';
const DAY_MS = 86_400_000;
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);
/** Noon UTC of the day `daysAgo` days ago. */
const noon = (daysAgo: number, minute = 0) => new Date(Date.parse(day(daysAgo)) + 12 * 3_600_000 + minute * 60_000);
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const ENDPOINTS = [
  { name: 'tokens', groupBy: 'model' },
  { name: 'tools', groupBy: 'tool_name' },
  { name: 'activity', groupBy: 'client' },
  { name: 'productivity', groupBy: undefined },
  { name: 'users', groupBy: undefined },
] as const;
type Endpoint = (typeof ENDPOINTS)[number]['name'];
const NAMES = ENDPOINTS.map((e) => e.name);
const GROUPED = ENDPOINTS.filter((e) => e.groupBy !== undefined);
const UNGROUPED = ENDPOINTS.filter((e) => e.groupBy === undefined);

const reference = JSON.parse(readFileSync(join(__dirname, '../reference/analytics-api.openapi.json'), 'utf8')) as Json;
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addSchema({ ...reference, $id: 'reference' });
const validateError = ajv.compile({ $ref: 'reference#/components/schemas/ErrorResponse' });

/** No stack frames, source or dependency paths anywhere in a response. */
function expectNoInternals(res: Response) {
  expect(res.text).not.toMatch(/\bat [\w.<>]+ \(|\bat .+:\d+:\d+|\n\s+at /);
  expect(res.text).not.toContain('/src/');
  expect(res.text).not.toContain('node_modules');
  expect(res.text).not.toMatch(/\.ts:\d+|\.js:\d+/);
  expect(res.text).not.toMatch(/"stack"|Error:/);
}

/**
 * The analytics error body: exactly `{title, detail, status, requestId}` (no metadata), requestId
 * being the response's x-request-id, and `detail` starting with the parameter it names.
 */
function expectAnalyticsError(res: Response, status: number, field?: string) {
  const title = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 415: 'Unsupported Media Type' }[status];
  expect({ status: res.status, body: res.body as Json }).toEqual({
    status,
    body: {
      title,
      detail: field === undefined ? expect.any(String) : expect.stringMatching(new RegExp(`^${escape(field)}: `)),
      status,
      requestId: res.headers['x-request-id'],
    },
  });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body as Json).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
  expect((res.body as Json).detail.length).toBeGreaterThan(0);
  validateError(res.body);
  expect(validateError.errors ?? []).toEqual([]);
  expectNoInternals(res);
}

describe('Analytics: parameters, roles and isolation', () => {
  let t: TestApp;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let guest: TestUser;
  const OK = () => `startDate=${day(3)}&endDate=${day(1)}`;

  beforeAll(async () => {
    t = await startTestApp();
    const org = await createOrganization(t);
    owner = await createUser(t, Role.Owner, org);
    manager = await createUser(t, Role.Manager, org);
    member = await createUser(t, Role.Member, org);
    guest = await createUser(t, Role.Guest, org);
  });

  afterAll(() => t.close());

  const get = (endpoint: Endpoint, query: string, user: TestUser | null = owner) => {
    const req = t.http().get(`${BASE}/${endpoint}?${query}`).set('x-request-id', `in-${endpoint}`);
    return user ? req.set(user.auth) : req;
  };

  describe('dates, on every endpoint', () => {
    const cases: Array<[string, () => string, string]> = [
      ['no dates at all', () => '', 'startDate'],
      ['a missing startDate', () => `endDate=${day(1)}`, 'startDate'],
      ['a missing endDate', () => `startDate=${day(2)}`, 'endDate'],
      ['an empty startDate', () => `startDate=&endDate=${day(1)}`, 'startDate'],
      ['an empty endDate', () => `startDate=${day(2)}&endDate=`, 'endDate'],
      ['a startDate without a value', () => `startDate&endDate=${day(1)}`, 'startDate'],
      ['startDate 2026-1-5', () => `startDate=2026-1-5&endDate=${day(1)}`, 'startDate'],
      ['endDate 2026-1-5', () => `startDate=2026-01-05&endDate=2026-1-5`, 'endDate'],
      ['startDate 2026-02-30', () => `startDate=2026-02-30&endDate=${day(1)}`, 'startDate'],
      ['endDate 2026-02-29 (not a leap year)', () => `startDate=2026-02-01&endDate=2026-02-29`, 'endDate'],
      ['startDate 2026-13-01', () => `startDate=2026-13-01&endDate=${day(1)}`, 'startDate'],
      ['startDate 2026-00-10', () => `startDate=2026-00-10&endDate=${day(1)}`, 'startDate'],
      ['startDate yesterday', () => `startDate=yesterday&endDate=${day(1)}`, 'startDate'],
      ['endDate yesterday', () => `startDate=${day(2)}&endDate=yesterday`, 'endDate'],
      ['startDate 20260115', () => `startDate=20260115&endDate=${day(1)}`, 'startDate'],
      ['startDate as a date-time', () => `startDate=2026-01-15T00:00:00Z&endDate=${day(1)}`, 'startDate'],
      ['startDate with a leading space', () => `startDate=%202026-01-15&endDate=${day(1)}`, 'startDate'],
      ['startDate with a NUL byte', () => `startDate=2026-01-15%00&endDate=${day(1)}`, 'startDate'],
      ['startDate 26-01-15', () => `startDate=26-01-15&endDate=${day(1)}`, 'startDate'],
      ['startDate twice (a, b)', () => `startDate=a&startDate=b&endDate=${day(1)}`, 'startDate'],
      ['startDate twice (the same real date)', () => `startDate=${day(2)}&startDate=${day(2)}&endDate=${day(1)}`, 'startDate'],
      ['endDate twice', () => `startDate=${day(3)}&endDate=${day(2)}&endDate=${day(1)}`, 'endDate'],
      ['startDate[] (bracket syntax)', () => `startDate[]=${day(2)}&endDate=${day(1)}`, 'startDate[]'],
      ['a 2000-character startDate', () => `startDate=${'9'.repeat(2000)}&endDate=${day(1)}`, 'startDate'],
      ['a 33-character startDate starting with a date', () => `startDate=${day(2)}${'0'.repeat(23)}&endDate=${day(1)}`, 'startDate'],
      ['a 2000-character endDate', () => `startDate=${day(2)}&endDate=${'x'.repeat(2000)}`, 'endDate'],
      ['a six-digit year', () => `startDate=${day(2)}&endDate=275760-09-13`, 'endDate'],
      ['startDate after endDate', () => `startDate=${day(1)}&endDate=${day(2)}`, 'startDate'],
      ['endDate today', () => `startDate=${day(2)}&endDate=${day(0)}`, 'endDate'],
      ['startDate and endDate today', () => `startDate=${day(0)}&endDate=${day(0)}`, 'endDate'],
      ['endDate tomorrow', () => `startDate=${day(1)}&endDate=${day(-1)}`, 'endDate'],
      ['both dates in the future', () => `startDate=${day(-5)}&endDate=${day(-3)}`, 'endDate'],
      ['endDate 9999-12-31', () => `startDate=${day(2)}&endDate=9999-12-31`, 'endDate'],
      ['a range of 401 days', () => `startDate=${day(401)}&endDate=${day(1)}`, 'endDate'],
      ['a range of ten years', () => `startDate=2016-01-01&endDate=${day(1)}`, 'endDate'],
      ['an unknown parameter', () => `${OK()}&tz=UTC`, 'tz'],
      ['a parameter spelled in another case', () => `startdate=${day(2)}&endDate=${day(1)}`, 'startdate'],
    ];

    it.each(NAMES.flatMap((name) => cases.map(([label, query, field]) => [name, label, query, field] as const)))('%s: %s answers 400 naming it', async (name, _, query, field) => {
      const res = await get(name, query());
      expectAnalyticsError(res, 400, field);
      expect(res.body.requestId).toBe(`in-${name}`);
    });

    it.each(NAMES)('%s: a range of exactly 400 days, and one day, answer 200', async (name) => {
      const long = await get(name, `startDate=${day(400)}&endDate=${day(1)}`);
      expect(long.status).toBe(200);
      expect(long.body.meta).toMatchObject({ org_id: owner.organizationId, start_date: day(400), end_date: day(1) });
      const one = await get(name, `startDate=${day(1)}&endDate=${day(1)}`);
      expect(one.status).toBe(200);
      expect(one.body.meta).toMatchObject({ start_date: day(1), end_date: day(1) });
    });

    it('the message for each date rule says what is wrong', async () => {
      const detail = async (query: string) => ((await get('tokens', query)).body as Json).detail as string;
      expect(await detail(`endDate=${day(1)}`)).toMatch(/^startDate: is required/);
      expect(await detail(`startDate=2026-02-30&endDate=${day(1)}`)).toMatch(/^startDate: must be a real date in YYYY-MM-DD format$/);
      expect(await detail(`startDate=${day(1)}&endDate=${day(2)}`)).toMatch(/^startDate: must not be after endDate$/);
      expect(await detail(`startDate=${day(1)}&endDate=${day(0)}`)).toContain(`before today (${day(0)} UTC)`);
      expect(await detail(`startDate=${day(401)}&endDate=${day(1)}`)).toMatch(/^endDate: is 401 days after startDate; one request covers at most 400 days$/);
    });
  });

  describe('group_by', () => {
    const wrong = ['user', '', 'MODEL', 'tool', 'model,client', '*'];

    it.each(GROUPED.flatMap((e) => wrong.map((value) => [e.name, value] as const)))('%s: group_by=%j answers 400 naming group_by', async (name, value) => {
      expectAnalyticsError(await get(name, `${OK()}&group_by=${encodeURIComponent(value)}`), 400, 'group_by');
    });

    it.each(GROUPED.flatMap((e) => GROUPED.filter((other) => other !== e).map((other) => [e.name, other.groupBy] as const)))('%s: another endpoint\'s group_by (%s) answers 400', async (name, value) => {
      expectAnalyticsError(await get(name, `${OK()}&group_by=${value}`), 400, 'group_by');
    });

    it.each(GROUPED)('$name: group_by given twice answers 400', async ({ name, groupBy }) => {
      expectAnalyticsError(await get(name, `${OK()}&group_by=${groupBy}&group_by=${groupBy}`), 400, 'group_by');
    });

    it.each(GROUPED)('$name: group_by=$groupBy answers grouped rows', async ({ name, groupBy }) => {
      const res = await get(name, `${OK()}&group_by=${groupBy}`);
      expect(res.status).toBe(200);
      // No activity in this organization: a grouped answer has no rows (the ungrouped one has a row per day).
      expect(res.body).toEqual({ data: [], meta: { org_id: owner.organizationId, start_date: day(3), end_date: day(1) } });
      expect((await get(name, OK())).body.data).toHaveLength(3);
    });

    it.each(UNGROUPED.flatMap((e) => ['model', 'tool_name', 'client', ''].map((value) => [e.name, value] as const)))(
      '%s takes no group_by: group_by=%j is not an accepted query parameter (400)',
      async (name, value) => {
        const res = await get(name, `${OK()}&group_by=${value}`);
        expectAnalyticsError(res, 400, 'group_by');
        expect(res.body.detail).toMatch(/^group_by: is not an accepted query parameter \(accepted: [a-zA-Z, ]+\)$/);
      },
    );
  });

  describe('limit and cursor', () => {
    const badLimits = ['0', '101', '-1', '1.5', 'abc', '', '01', '1e1', '0x10', '+5', '%205', '100000000000000000000', 'Infinity', 'NaN'];

    it.each(badLimits)('users: limit=%j answers 400 naming limit', async (limit) => {
      const res = await get('users', `${OK()}&limit=${limit}`);
      expectAnalyticsError(res, 400, 'limit');
    });

    it('users: limit given twice answers 400', async () => {
      expectAnalyticsError(await get('users', `${OK()}&limit=5&limit=6`), 400, 'limit');
    });

    it.each(['1', '2', '20', '99', '100'])('users: limit=%s answers 200', async (limit) => {
      const res = await get('users', `${OK()}&limit=${limit}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [], meta: { org_id: owner.organizationId, start_date: day(3), end_date: day(1), has_more: false, next_cursor: null } });
    });

    it.each(['abc', '', 'user_123', 'a'.repeat(65), '123e4567e89b12d3a456426614174000', '{123e4567-e89b-12d3-a456-426614174000}', '123e4567-e89b-12d3-a456-426614174000x', '123e4567-e89b-12d3-a456-42661417400g'])(
      'users: cursor=%j (not a user id) answers 400 naming cursor',
      async (cursor) => {
        expectAnalyticsError(await get('users', `${OK()}&cursor=${encodeURIComponent(cursor)}`), 400, 'cursor');
      },
    );

    it('users: cursor given twice answers 400', async () => {
      expectAnalyticsError(await get('users', `${OK()}&cursor=${member.userId}&cursor=${manager.userId}`), 400, 'cursor');
    });

    it('users: the dates are checked before the cursor', async () => {
      expectAnalyticsError(await get('users', `startDate=bad&endDate=${day(1)}&cursor=abc`), 400, 'startDate');
    });

    it.each(NAMES.filter((n) => n !== 'users'))('%s takes no limit or cursor (400 naming them)', async (name) => {
      expectAnalyticsError(await get(name, `${OK()}&limit=5`), 400, 'limit');
      expectAnalyticsError(await get(name, `${OK()}&cursor=${member.userId}`), 400, 'cursor');
    });
  });

  describe('roles', () => {
    it.each(NAMES)('%s: no Authorization header answers 401', async (name) => {
      expectAnalyticsError(await get(name, OK(), null), 401);
    });

    it.each(NAMES.flatMap((name) => [
      [name, 'an unknown API key', `Bearer apk_${'Z'.repeat(43)}`],
      [name, 'a malformed token', 'Bearer nonsense'],
      [name, 'an empty token', 'Bearer '],
      [name, 'another scheme', `Basic ${Buffer.from('a:b').toString('base64')}`],
    ] as const))('%s: %s answers 401', async (name, _, header) => {
      expectAnalyticsError(await t.http().get(`${BASE}/${name}?${OK()}`).set('Authorization', header), 401);
    });

    it.each(NAMES.flatMap((name) => (['member', 'guest'] as const).map((role) => [name, role] as const)))('%s: a %s gets 403', async (name, role) => {
      const res = await get(name, OK(), role === 'member' ? member : guest);
      expectAnalyticsError(res, 403);
    });

    it.each(NAMES.flatMap((name) => (['manager', 'owner'] as const).map((role) => [name, role] as const)))('%s: a %s gets 200', async (name, role) => {
      const res = await get(name, OK(), role === 'manager' ? manager : owner);
      expect(res.status).toBe(200);
      expect(res.body.meta).toMatchObject({ org_id: owner.organizationId, start_date: day(3), end_date: day(1) });
      expect(Array.isArray(res.body.data)).toBe(true);
    });

    it.each(NAMES)('%s: credentials and role are checked before the parameters', async (name) => {
      expectAnalyticsError(await get(name, 'startDate=bad&group_by=nope', null), 401);
      expectAnalyticsError(await get(name, 'startDate=bad&group_by=nope', member), 403);
      expectAnalyticsError(await get(name, 'startDate=bad&group_by=nope', guest), 403);
    });

    it('unknown analytics routes answer 404 and other methods of known ones 405 (with Allow), in the analytics body', async () => {
      expectAnalyticsError(await t.http().get(`${BASE}/sessions?${OK()}`).set(owner.auth), 404);
      const post = await t.http().post(`${BASE}/tokens?${OK()}`).set(owner.auth).send({});
      expectAnalyticsError(post, 405);
      expect(post.headers.allow).toBe('GET, HEAD');
      const get = await t.http().get(`${BASE}/rollup`).set(owner.auth);
      expectAnalyticsError(get, 405);
      expect(get.headers.allow).toBe('POST');
    });
  });

  describe('the rollup trigger', () => {
    const rollup = (user: TestUser | null) => {
      const req = t.http().post(`${BASE}/rollup`);
      return user ? req.set(user.auth) : req;
    };

    it('answers the owner 200 with the days it rolled up (none here)', async () => {
      const res = await rollup(owner).expect(200);
      expect(res.body).toEqual({ data: { rolled_up_days: [] }, meta: { org_id: owner.organizationId } });
    });

    it('is for owners only: managers, members and guests get 403', async () => {
      for (const user of [manager, member, guest]) expectAnalyticsError(await rollup(user), 403);
    });

    it('answers 401 without or with a bad key', async () => {
      expectAnalyticsError(await rollup(null), 401);
      expectAnalyticsError(await t.http().post(`${BASE}/rollup`).set('Authorization', `Bearer apk_${'Z'.repeat(43)}`), 401);
    });

    it('ignores a JSON body', async () => {
      for (const body of [{ organizationId: guest.organizationId, days: [day(2)] }, [], { force: true }]) {
        const res = await rollup(owner).send(body);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ data: { rolled_up_days: [] }, meta: { org_id: owner.organizationId } });
      }
    });

    it('refuses a body that is not JSON (415) or not valid JSON (400), in the analytics body; without a credential 401 before the body', async () => {
      expectAnalyticsError(await rollup(owner).set('content-type', 'text/plain').send('roll up'), 415);
      expectAnalyticsError(await rollup(owner).set('content-type', 'application/json').send('{'), 400);
      expectAnalyticsError(await rollup(null).set('content-type', 'text/plain').send('roll up'), 401);
      expectAnalyticsError(await rollup(null).set('content-type', 'application/json').send('{'), 401);
    });
  });

  describe('another organization\'s data', () => {
    let home: { owner: TestUser; manager: TestUser; first: TestUser; second: TestUser };
    let other: { owner: TestUser; member: TestUser };
    const RANGE = () => `startDate=${day(3)}&endDate=${day(1)}`;

    const session = (user: TestUser, daysAgo: number, fields: Partial<PastSession> & Pick<PastSession, 'messages'>): PastSession => ({
      organizationId: user.organizationId,
      ownerId: user.userId,
      title: 'past',
      settings: {},
      createdAt: noon(daysAgo),
      usage: [],
      ...fields,
    });
    const usage = (model: string, at: Date, input: number, output: number) => ({
      model,
      at,
      usage: { inputTokens: input, outputTokens: output, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0 },
    });
    const as = (user: TestUser, endpoint: Endpoint, query = RANGE()) => t.http().get(`${BASE}/${endpoint}?${query}`).set(user.auth);
    const rollupAs = (user: TestUser, body?: object) => t.http().post(`${BASE}/rollup`).set(user.auth).send(body);

    beforeAll(async () => {
      const homeOrg = await createOrganization(t);
      home = {
        owner: await createUser(t, Role.Owner, homeOrg),
        manager: await createUser(t, Role.Manager, homeOrg),
        first: await createUser(t, Role.Member, homeOrg),
        second: await createUser(t, Role.Member, homeOrg),
      };
      const otherOrg = await createOrganization(t);
      other = { owner: await createUser(t, Role.Owner, otherOrg), member: await createUser(t, Role.Member, otherOrg) };
      const history = t.app.get(HistoryImportService);

      // Home, two days ago: one terminal session with a slash command, an edit and a commit; one web session.
      await history.importSession(
        session(home.first, 2, {
          settings: { autonomyLevel: 'high' },
          messages: [
            { role: MessageRole.User, userMessageSource: 'cli_tui', content: [{ type: 'text', text: '/review go' }], createdAt: noon(2, 1) },
            {
              role: MessageRole.Assistant,
              attributes: { modelId: 'model-home' },
              createdAt: noon(2, 2),
              content: [
                { type: 'tool_use', id: 't1', name: 'Edit', input: { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' } },
                { type: 'tool_use', id: 't2', name: 'Bash', input: { command: 'git commit -am fix' } },
              ],
            },
          ],
          usage: [usage('model-home', noon(2, 3), 100, 10)],
        }),
      );
      await history.importSession(
        session(home.second, 2, {
          messages: [
            { role: MessageRole.User, userMessageSource: 'web', content: [{ type: 'text', text: 'hello' }], createdAt: noon(2, 5) },
            { role: MessageRole.Assistant, attributes: { modelId: 'model-home' }, content: [{ type: 'text', text: 'hi' }], createdAt: noon(2, 6) },
          ],
        }),
      );
      // The other organization, on the same day and the day before: much more of everything, with names of its own.
      for (const daysAgo of [3, 2]) {
        await history.importSession(
          session(other.member, daysAgo, {
            messages: [
              { role: MessageRole.User, userMessageSource: 'web', content: [{ type: 'text', text: '/secret-command' }], createdAt: noon(daysAgo, 1) },
              { role: MessageRole.User, userMessageSource: 'cli_exec', content: [{ type: 'text', text: 'more' }], createdAt: noon(daysAgo, 2) },
              {
                role: MessageRole.Assistant,
                attributes: { modelId: 'model-secret' },
                createdAt: noon(daysAgo, 3),
                content: [
                  { type: 'tool_use', id: 'a', name: 'mcp__SecretServer__leak', input: {} },
                  { type: 'tool_use', id: 'b', name: 'SecretTool', input: {} },
                  { type: 'tool_use', id: 'c', name: 'Write', input: { file_path: 'secret.py' } },
                  { type: 'tool_use', id: 'd', name: 'Bash', input: { command: 'git commit -m x && gh pr create --fill' } },
                ],
              },
              { role: MessageRole.System, attributes: { hookEventName: 'Stop', hookCommands: [{ command: 'secret-hook' }] }, content: [{ type: 'text', text: 'hook' }], createdAt: noon(daysAgo, 4) },
            ],
            usage: [usage('model-secret', noon(daysAgo, 5), 99_999, 9_999)],
          }),
        );
      }
      // The other organization's owner rolls up: its own days only.
      const rolled = await rollupAs(other.owner).expect(200);
      expect(rolled.body).toEqual({ data: { rolled_up_days: [day(3), day(2)] }, meta: { org_id: other.owner.organizationId } });
    });

    const expectNothingOfTheOther = (res: Response) => {
      for (const secret of ['secret', 'Secret', other.owner.userId, other.member.userId, other.member.email, other.owner.organizationId]) expect(res.text).not.toContain(secret);
    };

    it('before its own rollup, the home organization reads zeros and empty lists, never the other\'s rows', async () => {
      for (const name of ['tools', 'activity', 'productivity'] as const) {
        const res = await as(home.manager, name).expect(200);
        expectNothingOfTheOther(res);
        expect(res.body.data.map((row: Json) => row.date)).toEqual([day(3), day(2), day(1)]);
        for (const row of res.body.data as Json[]) {
          const numbers = Object.entries(row).filter(([, v]) => typeof v === 'number');
          expect(numbers.filter(([, v]) => v !== 0)).toEqual([]);
        }
      }
      const users = await as(home.manager, 'users').expect(200);
      expect(users.body).toEqual({ data: [], meta: { org_id: home.owner.organizationId, start_date: day(3), end_date: day(1), has_more: false, next_cursor: null } });
      for (const [name, groupBy] of [['tools', 'tool_name'], ['activity', 'client']] as const) {
        const grouped = await as(home.manager, name, `${RANGE()}&group_by=${groupBy}`).expect(200);
        expect(grouped.body.data).toEqual([]);
      }
    });

    it('tokens (read from the usage totals, not the rollup) show the home organization\'s usage only', async () => {
      const res = await as(home.manager, 'tokens').expect(200);
      expectNothingOfTheOther(res);
      expect(res.body.data.map((row: Json) => [row.date, row.billable_tokens])).toEqual([
        [day(3), 0],
        [day(2), 110],
        [day(1), 0],
      ]);
      expect(res.body.data[1].by_model).toEqual([{ model_id: 'model-home', model_tier: 'standard', billable_tokens: 110, input_tokens: 100, output_tokens: 10 }]);
      expect(res.body.data[1].by_user).toEqual([expect.objectContaining({ user_id: home.first.userId, billable_tokens: 110 })]);
      const grouped = await as(home.manager, 'tokens', `${RANGE()}&group_by=model`).expect(200);
      expect(grouped.body.data).toEqual([{ date: day(2), group_key: 'model-home', billable_tokens: 110, input_tokens: 100, output_tokens: 10 }]);
    });

    it('the home owner\'s rollup rolls up the home organization only, whatever the body says', async () => {
      const res = await rollupAs(home.owner, { organizationId: other.owner.organizationId }).expect(200);
      expect(res.body).toEqual({ data: { rolled_up_days: [day(2)] }, meta: { org_id: home.owner.organizationId } });
      // Idempotent: nothing new to roll up, for either organization.
      expect((await rollupAs(home.owner).expect(200)).body.data.rolled_up_days).toEqual([]);
      expect((await rollupAs(other.owner).expect(200)).body.data.rolled_up_days).toEqual([]);
    });

    it('after it, every endpoint shows exactly the home organization\'s activity', async () => {
      const [tools, activity, productivity, users] = await Promise.all((['tools', 'activity', 'productivity', 'users'] as const).map((name) => as(home.manager, name).expect(200)));
      for (const res of [tools, activity, productivity, users]) expectNothingOfTheOther(res);

      const toolsDay = (tools.body.data as Json[]).find((row) => row.date === day(2))!;
      expect(toolsDay).toMatchObject({
        tool_calls: 2,
        by_tool: [
          { tool: 'Bash', invocations: 1 },
          { tool: 'Edit', invocations: 1 },
        ],
        mcp_users_with_mcp: 0,
        mcp_by_server: [],
        slash_commands_invocations: 1,
        slash_commands_by_name: [{ name: '/review', count: 1 }],
        hooks_invocations: 0,
        web_users: 1,
        // Ratios 0 (second) and 2 (first).
        autonomy_ratio_avg: 1,
        autonomy_ratio_p50: 0,
        autonomy_ratio_p90: 2,
        tool_calls_per_session_avg: 1,
        user_turns_per_session_avg: 1,
        tool_autonomy_level_ratio: { auto_high: 1, auto_medium: 0, auto_low: 0, manual: 0 },
      });
      expect((tools.body.data as Json[]).filter((row) => row.date !== day(2)).map((row) => row.tool_calls)).toEqual([0, 0]);

      expect((activity.body.data as Json[]).map((row) => [row.date, row.daily_active_users, row.weekly_active_users, row.monthly_active_users, row.sessions, row.messages, row.user_messages])).toEqual([
        [day(3), 0, 0, 0, 0, 0, 0],
        [day(2), 2, 2, 2, 2, 4, 2],
        [day(1), 0, 2, 2, 0, 0, 0],
      ]);
      expect(activity.body.data[1].daily_active_users_by_client).toEqual({ 'terminal-ui': 1, web: 1, 'non-interactive-cli': 0 });

      expect((productivity.body.data as Json[])[1]).toEqual({
        date: day(2),
        files_created: 0,
        files_edited: 1,
        by_extension: [{ extension: 'ts', count: 1 }],
        by_language: [{ language: 'TypeScript', count: 1 }],
        git_commits: 1,
        git_prs_created: 0,
      });

      const ids = [home.first.userId, home.second.userId].sort();
      expect((users.body.data as Json[]).map((row) => [row.user_id, row.date])).toEqual(ids.map((id) => [id, day(2)]));
      expect((users.body.data as Json[]).find((row) => row.user_id === home.first.userId)).toMatchObject({
        user_email: home.first.email,
        tool_calls: 2,
        billable_tokens: 110,
        primary_model: 'model-home',
        files_edited: 1,
        git_commits: 1,
        slash_commands: 1,
        user_messages: 1,
        assistant_messages: 1,
        delegation_level: 'auto-high',
        languages: ['TypeScript'],
      });
    });

    it('the other organization still sees its own rows, and none of the home organization\'s', async () => {
      const res = await as(other.owner, 'tools').expect(200);
      expect(res.text).not.toContain('model-home');
      expect((res.body.data as Json[]).map((row) => row.tool_calls)).toEqual([4, 4, 0]);
      expect(res.body.data[1].mcp_by_server).toEqual([{ server: 'secretserver', invocations: 1 }]);
      const users = await as(other.owner, 'users').expect(200);
      expect(new Set((users.body.data as Json[]).map((row) => row.user_id))).toEqual(new Set([other.member.userId]));
      for (const id of [home.first.userId, home.second.userId, home.owner.organizationId]) expect(users.text).not.toContain(id);
    });

    it('pages users by cursor; an unknown but well-formed cursor pages after it (200)', async () => {
      const ids = [home.first.userId, home.second.userId].sort();
      const page = async (query: string) => {
        const res = await as(home.manager, 'users', `${RANGE()}&${query}`);
        expect(res.status).toBe(200);
        return [(res.body.data as Json[]).map((row) => row.user_id), res.body.meta.has_more, res.body.meta.next_cursor];
      };
      expect(await page('limit=1')).toEqual([[ids[0]], true, ids[0]]);
      expect(await page(`limit=1&cursor=${ids[0]}`)).toEqual([[ids[1]], false, null]);
      expect(await page(`limit=2`)).toEqual([ids, false, null]);
      // The same id in upper case.
      expect(await page(`limit=1&cursor=${ids[0].toUpperCase()}`)).toEqual([[ids[1]], false, null]);
      // Ids no user has: one just after the first user's, the smallest and the largest.
      const next = (BigInt(`0x${ids[0].replace(/-/g, '')}`) + 1n).toString(16).padStart(32, '0');
      const unknown = `${next.slice(0, 8)}-${next.slice(8, 12)}-${next.slice(12, 16)}-${next.slice(16, 20)}-${next.slice(20)}`;
      expect(await page(`cursor=${unknown}`)).toEqual([[ids[1]], false, null]);
      expect(await page('cursor=00000000-0000-0000-0000-000000000000')).toEqual([ids, false, null]);
      expect(await page('cursor=ffffffff-ffff-ffff-ffff-ffffffffffff')).toEqual([[], false, null]);
      // Another organization's user id is just an id: it pages after it and shows nothing of theirs.
      expect(await page(`cursor=${other.member.userId}`)).toEqual([ids.filter((id) => id > other.member.userId), false, null]);
    });
  });
});
