import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { HistoryImportService, PastSession } from '../../src/modules/sessions/history-import.service';
import { MessageRole } from '../../src/modules/sessions/domain/message';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { TestApp } from '../utils/test-app';
import { analyticsInputFixture, BASE, day, Endpoint, Json } from '../utils/fixtures/analytics-input';

/** The analytics endpoints never show another organization's data, over real HTTP. */

/** Noon UTC of the day `daysAgo` days ago. */
const noon = (daysAgo: number, minute = 0) => new Date(Date.parse(day(daysAgo)) + 12 * 3_600_000 + minute * 60_000);

describe('Analytics: parameters, roles and isolation', () => {
  const fixture = analyticsInputFixture();
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

  describe("another organization's data", () => {
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
              {
                role: MessageRole.System,
                attributes: { hookEventName: 'Stop', hookCommands: [{ command: 'secret-hook' }] },
                content: [{ type: 'text', text: 'hook' }],
                createdAt: noon(daysAgo, 4),
              },
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
      for (const secret of ['secret', 'Secret', other.owner.userId, other.member.userId, other.member.email, other.owner.organizationId])
        expect(res.text).not.toContain(secret);
    };

    it("before its own rollup, the home organization reads zeros and empty lists, never the other's rows", async () => {
      for (const name of ['tools', 'activity', 'productivity', 'tokens'] as const) {
        const res = await as(home.manager, name).expect(200);
        expectNothingOfTheOther(res);
        expect(res.body.data.map((row: Json) => row.date)).toEqual([day(3), day(2), day(1)]);
        for (const row of res.body.data as Json[]) {
          const numbers = Object.entries(row).filter(([, v]) => typeof v === 'number');
          expect(numbers.filter(([, v]) => v !== 0)).toEqual([]);
        }
      }
      const users = await as(home.manager, 'users').expect(200);
      expect(users.body).toEqual({
        data: [],
        meta: { org_id: home.owner.organizationId, start_date: day(3), end_date: day(1), has_more: false, next_cursor: null },
      });
      for (const [name, groupBy] of [
        ['tools', 'tool_name'],
        ['activity', 'client'],
        ['tokens', 'model'],
      ] as const) {
        const grouped = await as(home.manager, name, `${RANGE()}&group_by=${groupBy}`).expect(200);
        expect(grouped.body.data).toEqual([]);
      }
    });

    it("the home owner's rollup rolls up the home organization only, whatever the body says", async () => {
      const res = await rollupAs(home.owner, { organizationId: other.owner.organizationId }).expect(200);
      expect(res.body).toEqual({ data: { rolled_up_days: [day(2)] }, meta: { org_id: home.owner.organizationId } });
      // Idempotent: nothing new to roll up, for either organization.
      expect((await rollupAs(home.owner).expect(200)).body.data.rolled_up_days).toEqual([]);
      expect((await rollupAs(other.owner).expect(200)).body.data.rolled_up_days).toEqual([]);
    });

    it("after it, tokens show the home organization's usage only", async () => {
      const res = await as(home.manager, 'tokens').expect(200);
      expectNothingOfTheOther(res);
      expect(res.body.data.map((row: Json) => [row.date, row.billable_tokens])).toEqual([
        [day(3), 0],
        [day(2), 110],
        [day(1), 0],
      ]);
      expect(res.body.data[1].by_model).toEqual([
        { model_id: 'model-home', model_tier: 'standard', billable_tokens: 110, input_tokens: 100, output_tokens: 10 },
      ]);
      expect(res.body.data[1].by_user).toEqual([expect.objectContaining({ user_id: home.first.userId, billable_tokens: 110 })]);
      const grouped = await as(home.manager, 'tokens', `${RANGE()}&group_by=model`).expect(200);
      expect(grouped.body.data).toEqual([{ date: day(2), group_key: 'model-home', billable_tokens: 110, input_tokens: 100, output_tokens: 10 }]);
    });

    it("after it, every endpoint shows exactly the home organization's activity", async () => {
      const [tools, activity, productivity, users] = await Promise.all(
        (['tools', 'activity', 'productivity', 'users'] as const).map((name) => as(home.manager, name).expect(200)),
      );
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

      expect(
        (activity.body.data as Json[]).map((row) => [
          row.date,
          row.daily_active_users,
          row.weekly_active_users,
          row.monthly_active_users,
          row.sessions,
          row.messages,
          row.user_messages,
        ]),
      ).toEqual([
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

    it("the other organization still sees its own rows, and none of the home organization's", async () => {
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
