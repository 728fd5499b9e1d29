import Ajv from 'ajv';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;

const TOKENS = '/api/v1/analytics/tokens';
const DAY_MS = 86_400_000;
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);

/** Usage totals as Sessions writes them on each agent usage report, for days already closed; the day's usage fact marks it for the rollup. */
async function usage(
  t: TestApp,
  user: TestUser,
  daysAgo: number,
  model: string,
  tokens: { input: number; output: number; cacheWrite?: number; cacheRead?: number; thinking?: number },
) {
  await t.app.get(DataSource).query(
    `INSERT INTO token_usage_daily (organization_id, day, user_id, model, input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens, thinking_tokens)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [user.organizationId, day(daysAgo), user.userId, model, tokens.input, tokens.output, tokens.cacheWrite ?? 0, tokens.cacheRead ?? 0, tokens.thinking ?? 0],
  );
  await t.app
    .get(DataSource)
    .query('INSERT INTO analytics_dirty_days (organization_id, day) VALUES ($1, $2) ON CONFLICT DO NOTHING', [user.organizationId, day(daysAgo)]);
}

describe('Analytics: tokens', () => {
  let t: TestApp;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let guest: TestUser;
  const reference = JSON.parse(readFileSync(join(__dirname, '../reference/analytics-api.openapi.json'), 'utf8')) as Json;
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addFormat('date', /^\d{4}-\d{2}-\d{2}$/);
  ajv.addSchema({ ...reference, $id: 'reference' });
  const validateReference = ajv.compile({ $ref: 'reference#/components/schemas/TokenUsageResponse' });

  beforeAll(async () => {
    t = await startTestApp();
    const org = await createOrganization(t);
    owner = await createUser(t, Role.Owner, org);
    manager = await createUser(t, Role.Manager, org);
    member = await createUser(t, Role.Member, org);
    guest = await createUser(t, Role.Guest, org);
    // Three closed days: 3 days ago quiet, 2 days ago two users on two models, yesterday one user thinking.
    await usage(t, member, 2, 'model-a', { input: 1000, output: 200, cacheWrite: 400, cacheRead: 5000 });
    await usage(t, member, 2, 'model-b', { input: 10, output: 5 });
    await usage(t, manager, 2, 'model-a', { input: 300, output: 100, cacheRead: 1001 });
    await usage(t, owner, 1, 'model-b', { input: 50, output: 20, thinking: 30 });
    // Another organization's usage on the same days never shows, even rolled up.
    const other = await createUser(t, Role.Owner);
    await usage(t, other, 2, 'model-a', { input: 999_999, output: 999_999 });
    await rollup(other);
    await rollup(owner);
  });

  const rollup = (user: TestUser) => t.http().post('/api/v1/analytics/rollup').set(user.auth).expect(200);

  afterAll(() => t.close());

  const get = (user: TestUser, query: string) => t.http().get(`${TOKENS}?${query}`).set(user.auth);

  it('answers one row per day with exact totals, by model and by user', async () => {
    const res = await get(manager, `startDate=${day(3)}&endDate=${day(1)}`).expect(200);
    validateReference(res.body);
    expect(validateReference.errors ?? []).toEqual([]);
    expect(res.body.meta).toEqual({ org_id: owner.organizationId, start_date: day(3), end_date: day(1) });
    const [quiet, busy, thinking] = res.body.data as Json[];
    expect(quiet).toEqual({
      date: day(3),
      billable_tokens: 0,
      input_tokens: 0,
      output_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      by_model: [],
      by_user: [],
    });
    // member model-a: 1000 + 200 + floor((125*400 + 10*5000)/100) = 1000 + 200 + 1000 = 2200; model-b: 15; manager model-a: 300 + 100 + floor(10010/100) = 500.
    expect(busy).toMatchObject({
      date: day(2),
      billable_tokens: 2715,
      input_tokens: 1310,
      output_tokens: 305,
      cache_read_tokens: 6001,
      cache_write_tokens: 400,
    });
    expect(busy.by_model).toEqual([
      { model_id: 'model-a', model_tier: 'standard', billable_tokens: 2700, input_tokens: 1300, output_tokens: 300 },
      { model_id: 'model-b', model_tier: 'standard', billable_tokens: 15, input_tokens: 10, output_tokens: 5 },
    ]);
    expect(busy.by_user).toEqual([
      {
        user_id: member.userId,
        user_email: expect.stringContaining('@'),
        billable_tokens: 2215,
        by_model: [
          { model_id: 'model-a', model_tier: 'standard', billable_tokens: 2200, input_tokens: 1000, output_tokens: 200 },
          { model_id: 'model-b', model_tier: 'standard', billable_tokens: 15, input_tokens: 10, output_tokens: 5 },
        ],
      },
      {
        user_id: manager.userId,
        user_email: expect.stringContaining('@'),
        billable_tokens: 500,
        by_model: [{ model_id: 'model-a', model_tier: 'standard', billable_tokens: 500, input_tokens: 300, output_tokens: 100 }],
      },
    ]);
    // Thinking tokens are output, and make the model's tier `thinking` that day.
    expect(thinking).toMatchObject({ date: day(1), billable_tokens: 100, input_tokens: 50, output_tokens: 50 });
    expect(thinking.by_model).toEqual([{ model_id: 'model-b', model_tier: 'thinking', billable_tokens: 100, input_tokens: 50, output_tokens: 50 }]);
  });

  it("grouped rows, models and users each sum to the day's totals", async () => {
    const [plain, grouped] = await Promise.all([
      get(owner, `startDate=${day(3)}&endDate=${day(1)}`).expect(200),
      get(owner, `startDate=${day(3)}&endDate=${day(1)}&group_by=model`).expect(200),
    ]);
    validateReference(grouped.body);
    expect(validateReference.errors ?? []).toEqual([]);
    expect(grouped.body.data).toEqual([
      { date: day(2), group_key: 'model-a', billable_tokens: 2700, input_tokens: 1300, output_tokens: 300 },
      { date: day(2), group_key: 'model-b', billable_tokens: 15, input_tokens: 10, output_tokens: 5 },
      { date: day(1), group_key: 'model-b', billable_tokens: 100, input_tokens: 50, output_tokens: 50 },
    ]);
    const sum = (rows: Json[], field: string) => rows.reduce((total, row) => total + row[field], 0);
    for (const row of plain.body.data as Json[]) {
      const groupedRows = (grouped.body.data as Json[]).filter((g) => g.date === row.date);
      for (const field of ['billable_tokens', 'input_tokens', 'output_tokens']) {
        expect(sum(groupedRows, field)).toBe(row[field]);
        expect(sum(row.by_model, field)).toBe(row[field]);
      }
      expect(sum(row.by_user, 'billable_tokens')).toBe(row.billable_tokens);
    }
  });

  it("serves the rolled-up day: usage reported later shows after the day's next rollup", async () => {
    const billable = async () => (await get(manager, `startDate=${day(1)}&endDate=${day(1)}`).expect(200)).body.data[0].billable_tokens as number;
    expect(await billable()).toBe(100);
    await usage(t, guest, 1, 'model-c', { input: 7, output: 3 });
    expect(await billable()).toBe(100);
    await rollup(owner);
    expect(await billable()).toBe(110);
  });

  it('answers no rows for days before the history starts (2026-01-14)', async () => {
    const res = await get(owner, 'startDate=2025-12-01&endDate=2026-01-13').expect(200);
    expect(res.body).toEqual({ data: [], meta: { org_id: owner.organizationId, start_date: '2025-12-01', end_date: '2026-01-13' } });
  });

  it.each([
    ['today', () => `startDate=${day(1)}&endDate=${day(0)}`, 'endDate'],
    ['a later day', () => `startDate=${day(1)}&endDate=${day(-3)}`, 'endDate'],
    ['a malformed date', () => `startDate=2026-1-14&endDate=${day(1)}`, 'startDate'],
    ['an impossible date', () => `startDate=2026-02-30&endDate=${day(1)}`, 'startDate'],
    ['a start after the end', () => `startDate=${day(1)}&endDate=${day(2)}`, 'startDate'],
    ['a missing startDate', () => `endDate=${day(1)}`, 'startDate'],
    ['a missing endDate', () => `startDate=${day(2)}`, 'endDate'],
    ['an unknown group_by', () => `startDate=${day(2)}&endDate=${day(1)}&group_by=user`, 'group_by'],
    ['an unknown parameter', () => `startDate=${day(2)}&endDate=${day(1)}&tz=UTC`, 'tz'],
  ])('%s answers 400 in the analytics error body', async (_, query, field) => {
    const res = await t.http().get(`${TOKENS}?${query()}`).set(owner.auth).set('x-request-id', 'an-1');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ title: 'Bad Request', detail: expect.stringMatching(new RegExp(`^${field}: `)), status: 400, requestId: 'an-1' });
  });

  it('is for managers and owners: members and guests get 403, no key 401, in the analytics body', async () => {
    const query = `startDate=${day(2)}&endDate=${day(1)}`;
    for (const user of [member, guest]) {
      const res = await get(user, query);
      expect(res.status).toBe(403);
      expect(Object.keys(res.body).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
    }
    const anonymous = await t.http().get(`${TOKENS}?${query}`);
    expect(anonymous.status).toBe(401);
    expect(Object.keys(anonymous.body).sort()).toEqual(['detail', 'requestId', 'status', 'title']);
  });
});
