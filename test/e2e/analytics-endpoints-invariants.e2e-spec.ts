import { Role } from '../../src/modules/auth';
import { HistoryImportService } from '../../src/modules/sessions';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { TestApp } from '../utils/test-app';
import { byDate, CLIENTS, generate, GENERATED_DAYS, nearestRank, Oracle, round2, sum } from '../utils/fixtures/analytics-generated';
import { analyticsFixture } from '../utils/fixtures/analytics';
import { agent, at, billable, D1, D3, D6, day, DAY_MS, daysOf, Json, MEDIUM, said, tool, usage } from '../utils/fixtures/analytics-history';

/**
 * The invariants that tie the analytics endpoints together, on the hand-built scenario and on a larger seeded
 * organization checked against an independent count; rollups of late data and other organizations' facts.
 */

describe('Analytics endpoints', () => {
  const fixture = analyticsFixture();
  const { importSession, get, range, rollUp, pages, everything } = fixture;
  let t: TestApp;
  let owner: TestUser;
  let outsider: TestUser;
  beforeAll(() => ({ t, owner, outsider } = fixture));

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
      await t.app.get(HistoryImportService).importSessions(generated.sessions);
      const rolled = await rollUp(generatedOwner);
      expect(rolled.data.rolled_up_days).toEqual(
        [...new Set(generated.sessions.flatMap((s) => [s.createdAt, ...s.messages.map((m) => m.createdAt)]).map((d) => d.toISOString().slice(0, 10)))].sort(),
      );
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
        const ratios = us
          .filter((r) => r.user_messages > 0)
          .map((r) => r.tool_calls / r.user_messages)
          .sort((a, b) => a - b);
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
        expect({
          date,
          tool_calls: tools.data[i].tool_calls,
          per_session: tools.data[i].tool_calls_per_session_avg,
          turns: tools.data[i].user_turns_per_session_avg,
        }).toEqual({
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
        expect(body.meta).toEqual({
          org_id: generatedOwner.organizationId,
          start_date: G_START,
          end_date: G_END,
          has_more: !last,
          next_cursor: last ? null : ids[ids.length - 1],
        });
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

    it("another organization's facts on the same days never appear, and it sees only its own", async () => {
      const markers = [
        outsider.userId,
        outsider.email,
        'OutsiderTool',
        'outsiderserver',
        'OutsiderServer',
        'model-outsider',
        'outsider-skill',
        '/outsiderCommand',
        'outsider-hook',
        'Ruby',
        'rb',
        '77777',
        '77784',
      ];
      for (const [user, start, end] of [
        [owner, D6, D1],
        [generatedOwner, G_START, G_END],
      ] as const) {
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
      await importSession(
        owner,
        MEDIUM,
        at(3, 18),
        [said(at(3, 18, 1), 'late', 'cli_tui'), agent(at(3, 18, 2), 'model-a', tool('Bash', { command: 'ls' }))],
        [usage('model-a', at(3, 18, 2), { input: 1, output: 1 })],
      );
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
      expect(after.activity.data[i3]).toMatchObject({
        daily_active_users: 3,
        daily_active_users_by_client: { 'terminal-ui': 2, web: 1, 'non-interactive-cli': 1 },
        sessions: 4,
        messages: 12,
        user_messages: 8,
      });
      const ownerD3 = after.users.flatMap((p: Json) => p.data).find((r: Json) => r.user_id === owner.userId && r.date === D3);
      // Turns at manual (autonomy off) and auto-medium: the tie goes to the more autonomous.
      expect(ownerD3).toMatchObject({
        tool_calls: 2,
        billable_tokens: 122,
        sessions: 2,
        user_messages: 2,
        assistant_messages: 2,
        autonomy_ratio: 1,
        delegation_level: 'auto-medium',
      });
      await checkInvariants(owner, D6, D1);
    });
  });
});
