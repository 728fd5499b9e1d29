import Ajv from 'ajv';
import type { Response } from 'supertest';
import { TestUser } from '../utils/factories';
import { TestApp } from '../utils/test-app';
import { analyticsInputFixture, BASE, day, ENDPOINTS, Json, reference } from '../utils/fixtures/analytics-input';

/** The analytics endpoints' parameters (dates, group_by, limit and cursor), roles and the rollup trigger, over real HTTP. */

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const NAMES = ENDPOINTS.map((e) => e.name);
const GROUPED = ENDPOINTS.filter((e) => e.groupBy !== undefined);
const UNGROUPED = ENDPOINTS.filter((e) => e.groupBy === undefined);
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
  const title = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 415: 'Unsupported Media Type' }[
    status
  ];
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
  const fixture = analyticsInputFixture();
  const { OK, get } = fixture;
  let t: TestApp;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let guest: TestUser;
  beforeAll(() => ({ t, owner, manager, member, guest } = fixture));

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

    it.each(NAMES.flatMap((name) => cases.map(([label, query, field]) => [name, label, query, field] as const)))(
      '%s: %s answers 400 naming it',
      async (name, _, query, field) => {
        const res = await get(name, query());
        expectAnalyticsError(res, 400, field);
        expect(res.body.requestId).toBe(`in-${name}`);
      },
    );

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

    it.each(GROUPED.flatMap((e) => GROUPED.filter((other) => other !== e).map((other) => [e.name, other.groupBy] as const)))(
      "%s: another endpoint's group_by (%s) answers 400",
      async (name, value) => {
        expectAnalyticsError(await get(name, `${OK()}&group_by=${value}`), 400, 'group_by');
      },
    );

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

    it.each([
      'abc',
      '',
      'user_123',
      'a'.repeat(65),
      '123e4567e89b12d3a456426614174000',
      '{123e4567-e89b-12d3-a456-426614174000}',
      '123e4567-e89b-12d3-a456-426614174000x',
      '123e4567-e89b-12d3-a456-42661417400g',
    ])('users: cursor=%j (not a user id) answers 400 naming cursor', async (cursor) => {
      expectAnalyticsError(await get('users', `${OK()}&cursor=${encodeURIComponent(cursor)}`), 400, 'cursor');
    });

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

    it.each(
      NAMES.flatMap(
        (name) =>
          [
            [name, 'an unknown API key', `Bearer apk_${'Z'.repeat(43)}`],
            [name, 'a malformed token', 'Bearer nonsense'],
            [name, 'an empty token', 'Bearer '],
            [name, 'another scheme', `Basic ${Buffer.from('a:b').toString('base64')}`],
          ] as const,
      ),
    )('%s: %s answers 401', async (name, _, header) => {
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
      expectAnalyticsError(
        await t
          .http()
          .post(`${BASE}/rollup`)
          .set('Authorization', `Bearer apk_${'Z'.repeat(43)}`),
        401,
      );
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
});
