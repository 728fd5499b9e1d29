import { TestUser } from '../utils/factories';
import { TestApp } from '../utils/test-app';
import { analyticsFixture, BASE } from '../utils/fixtures/analytics';
import { D1, D2, D3, D4, D5, D6, Json } from '../utils/fixtures/analytics-history';

/** The owner's rollup trigger and the per-day analytics endpoints (tokens, tools, productivity), every value computed by hand. */

describe('Analytics endpoints', () => {
  const fixture = analyticsFixture();
  const { get, range, rollUp, quietTools, quietProductivity, quietTokens } = fixture;
  let t: TestApp;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let outsider: TestUser;
  let firstRollup: Json;
  let outsiderRollup: Json;
  beforeAll(() => ({ t, owner, manager, member, outsider, firstRollup, outsiderRollup } = fixture));

  describe('POST /rollup', () => {
    it("rolled up exactly the organization's days with facts, in order, and a second call rolls up nothing", async () => {
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
            {
              user_id: O.userId,
              user_email: O.email,
              billable_tokens: 2200,
              by_model: [{ model_id: 'model-a', model_tier: 'standard', billable_tokens: 2200, input_tokens: 1000, output_tokens: 200 }],
            },
            {
              user_id: M.userId,
              user_email: M.email,
              billable_tokens: 550,
              by_model: [{ model_id: 'model-b', model_tier: 'thinking', billable_tokens: 550, input_tokens: 300, output_tokens: 150 }],
            },
            {
              user_id: B.userId,
              user_email: B.email,
              billable_tokens: 15,
              by_model: [{ model_id: 'model-a', model_tier: 'standard', billable_tokens: 15, input_tokens: 10, output_tokens: 5 }],
            },
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
            {
              user_id: O.userId,
              user_email: O.email,
              billable_tokens: 120,
              by_model: [{ model_id: 'model-a', model_tier: 'standard', billable_tokens: 120, input_tokens: 100, output_tokens: 20 }],
            },
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
          by_user: [
            {
              user_id: O.userId,
              user_email: O.email,
              billable_tokens: 700,
              by_model: [{ model_id: 'model-b', model_tier: 'thinking', billable_tokens: 700, input_tokens: 200, output_tokens: 400 }],
            },
          ],
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
});
