import { ActivityDay, ToolsDay } from './day-rollup';
import { activityByClient, activityRows, daysBefore, EMPTY_ACTIVITY, EMPTY_PRODUCTIVITY, EMPTY_TOOLS, perDay, toolsByName, ToolsRow } from './rows';

/** Every day from `from` through `to`. */
const range = (from: string, to: string): string[] => {
  const days: string[] = [];
  for (let t = Date.parse(from); t <= Date.parse(to); t += 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
};
const active = (userId: string, day: string, clients: string[] = ['web']) => ({ day, userId, clients });

describe('daysBefore', () => {
  it.each([
    ['2026-03-10', 0, '2026-03-10'],
    ['2026-03-10', 1, '2026-03-09'],
    ['2026-03-01', 1, '2026-02-28'],
    ['2024-03-01', 1, '2024-02-29'],
    ['2026-03-01', 29, '2026-01-31'],
    ['2026-01-01', 1, '2025-12-31'],
    ['2026-01-01', 29, '2025-12-03'],
    ['2026-01-14', 365, '2025-01-14'],
    ['2025-03-01', 365, '2024-03-01'],
    ['2026-03-30', 1, '2026-03-29'],
    ['2026-10-26', 1, '2026-10-25'],
    ['2026-12-31', -1, '2027-01-01'],
  ])('%s minus %i days is %s', (day, n, expected) => {
    expect(daysBefore(day, n)).toBe(expected);
  });
});

describe('perDay', () => {
  it('answers every day, with the stored row or the empty one', () => {
    const stored = new Map<string, ActivityDay>([['2026-03-02', { sessions: 2, messages: 5, user_messages: 2 }]]);
    expect(perDay(['2026-03-01', '2026-03-02', '2026-03-03'], stored, EMPTY_ACTIVITY)).toEqual([
      { date: '2026-03-01', sessions: 0, messages: 0, user_messages: 0 },
      { date: '2026-03-02', sessions: 2, messages: 5, user_messages: 2 },
      { date: '2026-03-03', sessions: 0, messages: 0, user_messages: 0 },
    ]);
    expect(perDay([], stored, EMPTY_ACTIVITY)).toEqual([]);
  });

  it('the empty rows are all zeros', () => {
    expect(perDay(['2026-03-01'], new Map(), EMPTY_PRODUCTIVITY)).toEqual([
      { date: '2026-03-01', files_created: 0, files_edited: 0, by_extension: [], by_language: [], git_commits: 0, git_prs_created: 0 },
    ]);
    expect(EMPTY_TOOLS.tool_autonomy_level_ratio).toEqual({ auto_high: 0, auto_medium: 0, auto_low: 0, manual: 0 });
    expect(Object.entries(EMPTY_TOOLS).filter(([, v]) => typeof v === 'number' && v !== 0)).toEqual([]);
    expect(Object.entries(EMPTY_TOOLS).filter(([, v]) => Array.isArray(v) && v.length > 0)).toEqual([]);
  });
});

describe('toolsByName', () => {
  it('flattens by_tool into one row per tool used each day, in order', () => {
    const row = (date: string, byTool: ToolsDay['by_tool']): ToolsRow => ({ ...EMPTY_TOOLS, date, by_tool: byTool });
    expect(
      toolsByName([
        row('2026-03-01', [
          { tool: 'Bash', invocations: 4 },
          { tool: 'Read', invocations: 1 },
        ]),
        row('2026-03-02', []),
        row('2026-03-03', [{ tool: 'mcp__github__x', invocations: 2 }]),
      ]),
    ).toEqual([
      { date: '2026-03-01', group_key: 'Bash', tool_calls: 4 },
      { date: '2026-03-01', group_key: 'Read', tool_calls: 1 },
      { date: '2026-03-03', group_key: 'mcp__github__x', tool_calls: 2 },
    ]);
    expect(toolsByName([])).toEqual([]);
  });
});

describe('activityRows', () => {
  const days = range('2026-03-01', '2026-03-12');
  const users = [
    // A: active only before the range: 29 days before 03-06 (in its month), never in a week of the range.
    active('A', '2026-02-05'),
    // B: two days before the range.
    active('B', '2026-02-27', ['terminal-ui']),
    // C: two days of the range with a gap, on two clients the first time.
    active('C', '2026-03-02', ['terminal-ui', 'web']),
    active('C', '2026-03-04'),
    // D: late in the range, headless.
    active('D', '2026-03-10', ['non-interactive-cli']),
    // E: once, on the same day as C.
    active('E', '2026-03-02'),
  ];
  const stored = new Map<string, ActivityDay>([['2026-03-02', { sessions: 2, messages: 5, user_messages: 3 }]]);
  const rows = activityRows(days, stored, users);
  const column = (field: 'daily_active_users' | 'weekly_active_users' | 'monthly_active_users') => rows.map((row) => row[field]);

  it('answers one row per day, with sessions and messages from the rollups', () => {
    expect(rows.map((row) => row.date)).toEqual(days);
    expect(rows[1]).toEqual({
      date: '2026-03-02',
      daily_active_users: 2,
      weekly_active_users: 3,
      monthly_active_users: 4,
      daily_active_users_by_client: { 'terminal-ui': 1, web: 2, 'non-interactive-cli': 0 },
      sessions: 2,
      messages: 5,
      user_messages: 3,
    });
    expect(rows[0]).toMatchObject({
      sessions: 0,
      messages: 0,
      user_messages: 0,
      daily_active_users_by_client: { 'terminal-ui': 0, web: 0, 'non-interactive-cli': 0 },
    });
  });

  it('counts daily active users', () => {
    //                                   01 02 03 04 05 06 07 08 09 10 11 12
    expect(column('daily_active_users')).toEqual([0, 2, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0]);
  });

  it('counts weekly active users over the 7 days ending on each day, each user once', () => {
    // 01: B. 02-05: B, C, E. 06-08: C, E (B's 02-27 left on 03-06). 09: C (03-04). 10: C, D. 11-12: D.
    expect(column('weekly_active_users')).toEqual([1, 3, 3, 3, 3, 2, 2, 2, 1, 2, 1, 1]);
  });

  it('counts monthly active users over the 30 days ending on each day, including users active only before the range', () => {
    // A (02-05) counts through 03-06; B all range; C and E from 03-02; D from 03-10.
    expect(column('monthly_active_users')).toEqual([2, 4, 4, 4, 4, 4, 3, 3, 3, 4, 4, 4]);
  });

  it('windows cross a year boundary, and end exactly 7 and 30 days after', () => {
    const rows = activityRows(range('2026-01-01', '2026-01-03'), new Map(), [
      active('old', '2025-12-03'),
      active('week', '2025-12-26'),
      active('gone', '2025-12-02'),
    ]);
    expect(rows.map((row) => [row.date, row.daily_active_users, row.weekly_active_users, row.monthly_active_users])).toEqual([
      ['2026-01-01', 0, 1, 2],
      ['2026-01-02', 0, 0, 1],
      ['2026-01-03', 0, 0, 1],
    ]);
  });

  it('a user active every day counts once in each window', () => {
    const every = range('2026-02-01', '2026-03-05').map((day) => active('U', day));
    const rows = activityRows(range('2026-03-01', '2026-03-05'), new Map(), every);
    expect(rows.map((row) => [row.daily_active_users, row.weekly_active_users, row.monthly_active_users])).toEqual(Array(5).fill([1, 1, 1]));
  });

  it('has no rows without days', () => {
    expect(activityRows([], stored, users)).toEqual([]);
  });
});

describe('activityByClient', () => {
  it('answers a row per client with active users, in client order, and none on quiet days', () => {
    const rows = activityRows(range('2026-03-01', '2026-03-03'), new Map(), [
      active('a', '2026-03-01', ['web', 'terminal-ui']),
      active('b', '2026-03-01', ['non-interactive-cli', 'web']),
      active('c', '2026-03-03', ['non-interactive-cli']),
    ]);
    expect(activityByClient(rows)).toEqual([
      { date: '2026-03-01', group_key: 'terminal-ui', daily_active_users: 1 },
      { date: '2026-03-01', group_key: 'web', daily_active_users: 2 },
      { date: '2026-03-01', group_key: 'non-interactive-cli', daily_active_users: 1 },
      { date: '2026-03-03', group_key: 'non-interactive-cli', daily_active_users: 1 },
    ]);
    // A user on two clients is in both, once in the day's total.
    expect(rows[0].daily_active_users).toBe(2);
    expect(activityByClient([])).toEqual([]);
  });
});
