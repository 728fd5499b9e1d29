import { TestUser } from '../utils/factories';
import { analyticsFixture, ENDPOINTS, GROUP_BY } from '../utils/fixtures/analytics';
import { D1, D2, D3, D4, D5, D6, daysOf, Json } from '../utils/fixtures/analytics-history';

/** The analytics endpoints about people (activity, users) and how ranges of dates are answered, every value computed by hand. */

describe('Analytics endpoints', () => {
  const fixture = analyticsFixture();
  const { get, range, pages, quietTools, quietProductivity, quietTokens } = fixture;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  beforeAll(() => ({ owner, manager, member } = fixture));

  describe('GET /activity', () => {
    it('answers every day with DAU/WAU/MAU, clients, sessions and messages', async () => {
      const body = await get(manager, 'activity', range(D6, D1));
      expect(body.meta).toEqual({ org_id: owner.organizationId, start_date: D6, end_date: D1 });
      const clients = (tui: number, web: number, cli: number) => ({ 'terminal-ui': tui, web, 'non-interactive-cli': cli });
      expect(body.data).toEqual([
        {
          date: D6,
          daily_active_users: 0,
          weekly_active_users: 0,
          monthly_active_users: 0,
          daily_active_users_by_client: clients(0, 0, 0),
          sessions: 0,
          messages: 0,
          user_messages: 0,
        },
        // O cli_tui, M web + desktop (both web), B cli_exec; 6 turns + 6 agent messages; 3 sessions.
        {
          date: D5,
          daily_active_users: 3,
          weekly_active_users: 3,
          monthly_active_users: 3,
          daily_active_users_by_client: clients(1, 1, 1),
          sessions: 3,
          messages: 12,
          user_messages: 6,
        },
        // Quiet, but the three users of 5 days ago are inside the 7- and 30-day windows.
        {
          date: D4,
          daily_active_users: 0,
          weekly_active_users: 3,
          monthly_active_users: 3,
          daily_active_users_by_client: clients(0, 0, 0),
          sessions: 0,
          messages: 0,
          user_messages: 0,
        },
        // O sessions_api, M cli_tui, B web; turns 1 + 3 + 3, agent messages 1 + 1 + 1.
        {
          date: D3,
          daily_active_users: 3,
          weekly_active_users: 3,
          monthly_active_users: 3,
          daily_active_users_by_client: clients(1, 1, 1),
          sessions: 3,
          messages: 10,
          user_messages: 7,
        },
        // O on cli_tui and web (counted once in DAU, in both clients), B on desktop and web; M only started a
        // session (counted in sessions, not active). Turns 2 + 2, agent messages 2 + 1.
        {
          date: D2,
          daily_active_users: 2,
          weekly_active_users: 3,
          monthly_active_users: 3,
          daily_active_users_by_client: clients(1, 2, 0),
          sessions: 2,
          messages: 7,
          user_messages: 4,
        },
        {
          date: D1,
          daily_active_users: 0,
          weekly_active_users: 3,
          monthly_active_users: 3,
          daily_active_users_by_client: clients(0, 0, 0),
          sessions: 0,
          messages: 0,
          user_messages: 0,
        },
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
        {
          date: D1,
          daily_active_users: 0,
          weekly_active_users: 3,
          monthly_active_users: 3,
          daily_active_users_by_client: { 'terminal-ui': 0, web: 0, 'non-interactive-cli': 0 },
          sessions: 0,
          messages: 0,
          user_messages: 0,
        },
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
          tool_calls: 5,
          billable_tokens: 2200,
          primary_model: 'model-a',
          primary_model_tier: 'standard',
          files_created: 1,
          files_edited: 1,
          git_commits: 1,
          git_prs_created: 1,
          mcp_calls: 2,
          slash_commands: 1,
          hooks: 2,
          sessions: 1,
          messages: 4,
          user_messages: 2,
          assistant_messages: 2,
          autonomy_ratio: 2.5,
          delegation_level: 'auto-high',
          languages: ['Dockerfile', 'TypeScript'],
        }),
        row(O, D3, {
          tool_calls: 1,
          billable_tokens: 120,
          primary_model: 'model-a',
          primary_model_tier: 'standard',
          sessions: 1,
          messages: 2,
          user_messages: 1,
          assistant_messages: 1,
          autonomy_ratio: 1,
          delegation_level: 'manual',
        }),
        row(O, D2, {
          // The agent's work in O's session is O's, including the answer to B's message.
          tool_calls: 3,
          billable_tokens: 700,
          primary_model: 'model-b',
          primary_model_tier: 'thinking',
          files_edited: 1,
          git_prs_created: 2,
          mcp_calls: 1,
          hooks: 1,
          sessions: 1,
          messages: 4,
          user_messages: 2,
          assistant_messages: 2,
          autonomy_ratio: 1.5,
          delegation_level: 'auto-high',
          languages: ['Makefile'],
        }),
        row(M, D5, {
          tool_calls: 4,
          billable_tokens: 550,
          primary_model: 'model-b',
          primary_model_tier: 'thinking',
          files_edited: 2,
          skill_calls: 1,
          slash_commands: 1,
          sessions: 1,
          messages: 4,
          user_messages: 2,
          assistant_messages: 2,
          autonomy_ratio: 2,
          delegation_level: 'spec',
          languages: ['Other', 'Python'],
        }),
        row(M, D3, {
          // Assistant messages by model-b, but model-a has more billable tokens (60 > 50): primary model-a.
          tool_calls: 3,
          billable_tokens: 110,
          primary_model: 'model-a',
          primary_model_tier: 'standard',
          files_created: 1,
          git_commits: 2,
          mcp_calls: 1,
          slash_commands: 1,
          sessions: 1,
          messages: 4,
          user_messages: 3,
          assistant_messages: 1,
          autonomy_ratio: 1,
          delegation_level: 'manual',
          languages: ['Python'],
        }),
        // Only started a session: no model, no turns, no tool calls.
        row(M, D2, { primary_model: 'unknown', primary_model_tier: 'standard', sessions: 1, delegation_level: 'manual' }),
        row(B, D5, {
          tool_calls: 3,
          billable_tokens: 15,
          primary_model: 'model-a',
          primary_model_tier: 'standard',
          sessions: 1,
          messages: 4,
          user_messages: 2,
          assistant_messages: 2,
          autonomy_ratio: 1.5,
          delegation_level: 'auto-low',
        }),
        row(B, D3, {
          // No usage: the primary model is the one that wrote B's assistant messages. 7 / 3 = 2.33.
          tool_calls: 7,
          primary_model: 'model-a',
          primary_model_tier: 'standard',
          files_edited: 2,
          skill_calls: 1,
          hooks: 1,
          sessions: 1,
          messages: 4,
          user_messages: 3,
          assistant_messages: 1,
          autonomy_ratio: 2.33,
          delegation_level: 'auto-medium',
          languages: ['TypeScript'],
        }),
        row(B, D2, {
          // A turn in O's session (auto-high) and one in B's own (auto-medium): the tie goes to the more autonomous.
          tool_calls: 1,
          primary_model: 'model-a',
          primary_model_tier: 'standard',
          files_edited: 1,
          slash_commands: 1,
          messages: 3,
          user_messages: 2,
          assistant_messages: 1,
          autonomy_ratio: 0.5,
          delegation_level: 'auto-high',
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

    it("pages with limit 1: one user per page, next_cursor the page's last user id, null on the last page", async () => {
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
        days.map((date) => ({
          date,
          daily_active_users: 0,
          weekly_active_users: 0,
          monthly_active_users: 0,
          daily_active_users_by_client: { 'terminal-ui': 0, web: 0, 'non-interactive-cli': 0 },
          sessions: 0,
          messages: 0,
          user_messages: 0,
        })),
      );
      expect((await get(owner, 'users', range(days[0], days[5]))).data).toEqual([]);
      for (const endpoint of ['tokens', 'tools', 'activity'] as const) {
        expect((await get(owner, endpoint, range(days[0], days[5], { group_by: GROUP_BY[endpoint]! }))).data).toEqual([]);
      }
    });
  });
});
