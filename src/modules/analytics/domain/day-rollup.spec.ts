import { FactCount, ModelUsage, percentile, round2, rollUpDay, shares2 } from './day-rollup';
import { FactKind } from './facts';

const fact = (userId: string, kind: FactKind, n: number, fields: Partial<FactCount> = {}): FactCount => ({
  userId,
  kind,
  client: null,
  level: null,
  name: null,
  detail: null,
  command: null,
  n,
  ...fields,
});
const usage = (userId: string, model: string, tokens: Partial<Omit<ModelUsage, 'userId' | 'model'>>): ModelUsage => ({
  userId,
  model,
  input: 0,
  output: 0,
  cacheWrite: 0,
  cacheRead: 0,
  thinking: 0,
  ...tokens,
});
const ZERO_LEVELS = { auto_high: 0, auto_medium: 0, auto_low: 0, manual: 0 };

describe('percentile (nearest rank)', () => {
  it('is 0 without values', () => {
    expect(percentile([], 50)).toBe(0);
    expect(percentile([], 90)).toBe(0);
  });

  it('is the only value of one', () => {
    for (const p of [0, 1, 50, 90, 100]) expect(percentile([7], p)).toBe(7);
  });

  it.each([
    [[1, 2, 3, 4], 50, 2],
    [[1, 2, 3, 4], 90, 4],
    [[1, 2, 3, 4, 5], 50, 3],
    [[1, 2, 3, 4, 5], 90, 5],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50, 5],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90, 9],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 90, 10],
    [Array.from({ length: 30 }, (_, i) => i + 1), 90, 27],
    [Array.from({ length: 20 }, (_, i) => i + 1), 90, 18],
    [[0, 0, 1, 5], 50, 0],
    [[3, 9], 0, 3],
    [[3, 9], 100, 9],
  ])('of %j at p%i is %d', (values, p, expected) => {
    expect(percentile(values, p)).toBe(expected);
  });
});

describe('round2', () => {
  it.each([
    [0, 0],
    [1.5, 1.5],
    [1 / 3, 0.33],
    [2 / 3, 0.67],
    [11 / 3, 3.67],
    [7 / 11, 0.64],
    [0.125, 0.13],
    [1.005, 1.01],
    [201 / 200, 1.01],
    [1e-7, 0],
  ])('%d is %d', (value, rounded) => {
    expect(round2(value)).toBe(rounded);
  });
});

describe('shares2', () => {
  it.each([
    [
      [1, 1, 2, 4],
      [0.13, 0.12, 0.25, 0.5],
    ], // one by one: 0.13 + 0.13 + 0.25 + 0.5 = 1.01
    [
      [1, 1, 1],
      [0.34, 0.33, 0.33],
    ], // one by one: 0.99
    [
      [2, 1, 0, 0],
      [0.67, 0.33, 0, 0],
    ],
    [
      [1, 2],
      [0.33, 0.67],
    ],
    [
      [0, 0, 0, 0],
      [0, 0, 0, 0],
    ],
    [
      [0, 7, 0, 0],
      [0, 1, 0, 0],
    ],
    [
      [1, 1, 1, 1, 1, 1, 1],
      [0.15, 0.15, 0.14, 0.14, 0.14, 0.14, 0.14],
    ],
  ])('%j share as %j', (counts, shares) => {
    expect(shares2(counts)).toEqual(shares);
  });

  it('always sums to exactly 1, each share within 0.01 of its exact value (seeded random counts)', () => {
    let seed = 20;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let run = 0; run < 2000; run++) {
      const counts = Array.from({ length: 1 + Math.floor(next() * 6) }, () => Math.floor(next() * (run % 2 ? 10 : 100_000)));
      const total = counts.reduce((a, b) => a + b, 0);
      const shares = shares2(counts);
      if (total === 0) {
        expect(shares.every((share) => share === 0)).toBe(true);
        continue;
      }
      expect(Math.round(shares.reduce((a, b) => a + b, 0) * 100)).toBe(100);
      shares.forEach((share, i) => {
        expect(Math.abs(share - counts[i] / total)).toBeLessThan(0.01 + 1e-9);
        expect(Math.round(share * 100) / 100).toBe(share);
      });
    }
  });
});

describe('rollUpDay', () => {
  it('an empty day has no users, zero counts, empty lists and all-zero ratios', () => {
    expect(rollUpDay([], [], 0)).toEqual({
      users: [],
      tools: {
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
        tool_autonomy_level_ratio: ZERO_LEVELS,
      },
      activity: { sessions: 0, messages: 0, user_messages: 0 },
      productivity: { files_created: 0, files_edited: 0, by_extension: [], by_language: [], git_commits: 0, git_prs_created: 0 },
    });
    // Sessions with messages but no facts of the day still divide nothing.
    expect(rollUpDay([], [], 3).tools.tool_calls_per_session_avg).toBe(0);
  });

  describe('a busy day, computed by hand', () => {
    const facts: FactCount[] = [
      // u1: 4 turns on two clients (2 auto-high, 2 spec), 4 assistant messages, 6 tool calls (2 MCP), a skill, a slash command, 2 hooks, 3 files, a commit.
      fact('u1', FactKind.SessionStarted, 1),
      fact('u1', FactKind.UserMessage, 2, { client: 'terminal-ui', level: 'auto-high' }),
      fact('u1', FactKind.UserMessage, 2, { client: 'web', level: 'spec' }),
      fact('u1', FactKind.AssistantMessage, 3, { name: 'model-a' }),
      fact('u1', FactKind.AssistantMessage, 1, { name: 'model-b' }),
      fact('u1', FactKind.ToolCall, 4, { name: 'Bash', level: 'auto_high' }),
      fact('u1', FactKind.ToolCall, 2, { name: 'mcp__github__list_issues', level: 'auto_high', detail: 'github' }),
      fact('u1', FactKind.Skill, 1, { name: 'pdf' }),
      fact('u1', FactKind.SlashCommand, 1, { name: '/review' }),
      fact('u1', FactKind.Hook, 2, { name: 'PostToolUse', detail: 'Edit', command: 'npm test' }),
      fact('u1', FactKind.FileCreated, 1, { name: 'ts', detail: 'TypeScript' }),
      fact('u1', FactKind.FileEdited, 2, { name: 'py', detail: 'Python' }),
      fact('u1', FactKind.GitCommit, 1),
      // u2: one headless turn in ask mode, one manual tool call, one assistant message, two pull requests.
      fact('u2', FactKind.SessionStarted, 1),
      fact('u2', FactKind.UserMessage, 1, { client: 'non-interactive-cli', level: 'manual' }),
      fact('u2', FactKind.AssistantMessage, 1, { name: 'model-a' }),
      fact('u2', FactKind.ToolCall, 1, { name: 'Read', level: 'manual' }),
      fact('u2', FactKind.GitPullRequest, 2),
      // u3: four web turns, no tool calls.
      fact('u3', FactKind.UserMessage, 4, { client: 'web', level: 'auto-low' }),
      // u5: tool calls only (in a session whose turns someone else wrote): not active.
      fact('u5', FactKind.ToolCall, 3, { name: 'Edit', level: 'auto_medium' }),
      fact('u5', FactKind.ToolCall, 1, { name: 'Edit', level: 'auto_high' }),
    ];
    const tokens: ModelUsage[] = [
      // u1 spends most on model-b (thinking), though model-a wrote more of its messages: 100 + 50 = 150 against 20.
      usage('u1', 'model-b', { input: 100, thinking: 50 }),
      usage('u1', 'model-a', { input: 10, output: 10 }),
      // u4: usage and nothing else: 5 + 5 + floor((125*4 + 10*10)/100) = 16.
      usage('u4', 'model-c', { input: 5, output: 5, cacheWrite: 4, cacheRead: 10 }),
    ];
    const day = rollUpDay(facts, tokens, 3);
    const metrics = (userId: string) => day.users.find((u) => u.userId === userId)!.metrics;

    it('has a row per user with facts or usage, in id order, active when they sent a turn', () => {
      expect(day.users.map((u) => [u.userId, u.active, u.clients])).toEqual([
        ['u1', true, ['terminal-ui', 'web']],
        ['u2', true, ['non-interactive-cli']],
        ['u3', true, ['web']],
        ['u4', false, []],
        ['u5', false, []],
      ]);
    });

    it("counts each user's metrics", () => {
      expect(metrics('u1')).toEqual({
        tool_calls: 6,
        billable_tokens: 170,
        primary_model: 'model-b',
        primary_model_tier: 'thinking',
        files_created: 1,
        files_edited: 2,
        git_commits: 1,
        git_prs_created: 0,
        mcp_calls: 2,
        skill_calls: 1,
        slash_commands: 1,
        hooks: 2,
        sessions: 1,
        messages: 8,
        user_messages: 4,
        assistant_messages: 4,
        autonomy_ratio: 1.5,
        // 2 turns auto-high, 2 spec: the tie goes to the more autonomous.
        delegation_level: 'auto-high',
        languages: ['Python', 'TypeScript'],
      });
      // No usage: the primary model is the one that wrote most assistant messages.
      expect(metrics('u2')).toMatchObject({
        tool_calls: 1,
        billable_tokens: 0,
        primary_model: 'model-a',
        primary_model_tier: 'standard',
        git_prs_created: 2,
        messages: 2,
        autonomy_ratio: 1,
        delegation_level: 'manual',
        languages: [],
      });
      expect(metrics('u3')).toMatchObject({
        tool_calls: 0,
        user_messages: 4,
        messages: 4,
        autonomy_ratio: 0,
        delegation_level: 'auto-low',
        primary_model: 'unknown',
        primary_model_tier: 'standard',
      });
      expect(metrics('u4')).toMatchObject({
        billable_tokens: 16,
        primary_model: 'model-c',
        primary_model_tier: 'standard',
        user_messages: 0,
        autonomy_ratio: 0,
        delegation_level: 'manual',
        sessions: 0,
      });
      // No turns: the level most tool calls ran at.
      expect(metrics('u5')).toMatchObject({ tool_calls: 4, autonomy_ratio: 0, delegation_level: 'auto-medium', primary_model: 'unknown' });
    });

    it('sums the tools row', () => {
      // Ratios over users with a turn: u3 0, u2 1, u1 1.5 → average 0.83, p50 the 2nd (1), p90 the 3rd (1.5).
      expect(day.tools).toEqual({
        tool_calls: 11,
        by_tool: [
          { tool: 'Bash', invocations: 4 },
          { tool: 'Edit', invocations: 4 },
          { tool: 'mcp__github__list_issues', invocations: 2 },
          { tool: 'Read', invocations: 1 },
        ],
        mcp_users_with_mcp: 1,
        mcp_by_server: [{ server: 'github', invocations: 2 }],
        skills_invocations: 1,
        skills_by_name: [{ name: 'pdf', count: 1 }],
        slash_commands_invocations: 1,
        slash_commands_by_name: [{ name: '/review', count: 1 }],
        hooks_invocations: 2,
        hooks_by_event: [{ event: 'PostToolUse', matcher: 'Edit', command: 'npm test', count: 2 }],
        web_users: 2,
        autonomy_ratio_avg: 0.83,
        autonomy_ratio_p50: 1,
        autonomy_ratio_p90: 1.5,
        // 11 tool calls and 9 turns over 3 sessions with messages.
        tool_calls_per_session_avg: 3.67,
        user_turns_per_session_avg: 3,
        // auto_high 6 + 1, auto_medium 3, manual 1, of 11.
        tool_autonomy_level_ratio: { auto_high: 0.64, auto_medium: 0.27, auto_low: 0, manual: 0.09 },
      });
    });

    it('sums the activity and productivity rows', () => {
      expect(day.activity).toEqual({ sessions: 2, messages: 14, user_messages: 9 });
      expect(day.productivity).toEqual({
        files_created: 1,
        files_edited: 2,
        by_extension: [
          { extension: 'py', count: 2 },
          { extension: 'ts', count: 1 },
        ],
        by_language: [
          { language: 'Python', count: 2 },
          { language: 'TypeScript', count: 1 },
        ],
        git_commits: 1,
        git_prs_created: 2,
      });
    });

    it("user rows sum to the day's totals", () => {
      const sum = (field: 'tool_calls' | 'user_messages' | 'messages' | 'files_created' | 'git_prs_created' | 'hooks') =>
        day.users.reduce((total, u) => total + u.metrics[field], 0);
      expect(sum('tool_calls')).toBe(day.tools.tool_calls);
      expect(sum('user_messages')).toBe(day.activity.user_messages);
      expect(sum('messages')).toBe(day.activity.messages);
      expect(sum('files_created')).toBe(day.productivity.files_created);
      expect(sum('git_prs_created')).toBe(day.productivity.git_prs_created);
      expect(sum('hooks')).toBe(day.tools.hooks_invocations);
    });

    it('does not depend on the order of the facts or the usage', () => {
      expect(rollUpDay([...facts].reverse(), [...tokens].reverse(), 3)).toEqual(day);
    });
  });

  describe('the primary model', () => {
    const primary = (facts: FactCount[], tokens: ModelUsage[]) => {
      const [u] = rollUpDay(facts, tokens, 1).users;
      return [u.metrics.primary_model, u.metrics.primary_model_tier];
    };

    it('is the model with the most billable tokens, counting cache discounts and thinking as output', () => {
      // model-a: 100 + floor(10*1000/100) = 200; model-b: 150 + 60 = 210 (thinking).
      expect(primary([], [usage('u', 'model-a', { input: 100, cacheRead: 1000 }), usage('u', 'model-b', { output: 150, thinking: 60 })])).toEqual([
        'model-b',
        'thinking',
      ]);
      // model-a: 100 + floor(125*100/100) = 225 beats model-b's 210.
      expect(primary([], [usage('u', 'model-a', { input: 100, cacheWrite: 100 }), usage('u', 'model-b', { output: 150, thinking: 60 })])).toEqual([
        'model-a',
        'standard',
      ]);
    });

    it('by tokens even when another model wrote more messages', () => {
      const facts = [fact('u', FactKind.AssistantMessage, 9, { name: 'chatty' }), fact('u', FactKind.AssistantMessage, 1, { name: 'big' })];
      expect(primary(facts, [usage('u', 'big', { input: 10 }), usage('u', 'chatty', { input: 9 })])).toEqual(['big', 'standard']);
    });

    it('by assistant messages without usage', () => {
      const facts = [fact('u', FactKind.AssistantMessage, 1, { name: 'model-a' }), fact('u', FactKind.AssistantMessage, 2, { name: 'model-b' })];
      expect(primary(facts, [])).toEqual(['model-b', 'standard']);
    });

    it('ties go to the first name', () => {
      expect(primary([], [usage('u', 'zeta', { input: 10 }), usage('u', 'alpha', { output: 10 })])).toEqual(['alpha', 'standard']);
      expect(primary([fact('u', FactKind.AssistantMessage, 2, { name: 'zeta' }), fact('u', FactKind.AssistantMessage, 2, { name: 'alpha' })], [])).toEqual([
        'alpha',
        'standard',
      ]);
    });

    it('is thinking only when the primary model itself thought', () => {
      expect(primary([], [usage('u', 'model-a', { input: 1000 }), usage('u', 'model-b', { input: 1, thinking: 1 })])).toEqual(['model-a', 'standard']);
    });

    it('is unknown without usage or named assistant messages', () => {
      expect(primary([fact('u', FactKind.AssistantMessage, 3)], [])).toEqual(['unknown', 'standard']);
    });
  });

  describe('the delegation level', () => {
    const level = (facts: FactCount[]) => rollUpDay(facts, [], 1).users[0].metrics.delegation_level;
    const turns = (lvl: string, n: number) => fact('u', FactKind.UserMessage, n, { client: 'web', level: lvl });
    const calls = (lvl: string, n: number) => fact('u', FactKind.ToolCall, n, { name: 'Bash', level: lvl });

    it('is the level of most turns', () => {
      expect(level([turns('manual', 3), turns('auto-high', 2)])).toBe('manual');
      expect(level([turns('spec', 1), turns('auto-low', 2), calls('auto_high', 50)])).toBe('auto-low');
    });

    it.each([
      [['auto-medium', 'manual'], 'auto-medium'],
      [['manual', 'spec'], 'spec'],
      [['spec', 'auto-low'], 'auto-low'],
      [['auto-low', 'auto-high'], 'auto-high'],
      [['manual', 'spec', 'auto-low', 'auto-medium', 'auto-high'], 'auto-high'],
    ])('ties among %j go to the more autonomous, %s', (levels, expected) => {
      expect(level(levels.map((l) => turns(l, 2)))).toBe(expected);
    });

    it('without turns, is the level of most tool calls (ties: the more autonomous)', () => {
      expect(level([calls('manual', 3), calls('auto_low', 2)])).toBe('manual');
      expect(level([calls('manual', 2), calls('auto_low', 2)])).toBe('auto-low');
      expect(level([calls('auto_medium', 1), calls('auto_high', 1)])).toBe('auto-high');
    });

    it('with neither, is manual', () => {
      expect(level([fact('u', FactKind.AssistantMessage, 1)])).toBe('manual');
      expect(level([turns('', 0)])).toBe('manual');
    });
  });

  it('names missing values: a tool call as unknown, a file as (none) and Other', () => {
    const day = rollUpDay([fact('u', FactKind.ToolCall, 2), fact('u', FactKind.FileEdited, 1), fact('u', FactKind.Skill, 1)], [], 1);
    expect(day.tools.by_tool).toEqual([{ tool: 'unknown', invocations: 2 }]);
    expect(day.tools.skills_by_name).toEqual([{ name: '', count: 1 }]);
    // Tool calls without a level are not in the autonomy distribution.
    expect(day.tools.tool_autonomy_level_ratio).toEqual(ZERO_LEVELS);
    expect(day.productivity.by_extension).toEqual([{ extension: '(none)', count: 1 }]);
    expect(day.productivity.by_language).toEqual([{ language: 'Other', count: 1 }]);
    expect(day.users[0].metrics.languages).toEqual(['Other']);
  });

  it('counts users and servers across users, and hooks per event, matcher and command, largest first', () => {
    const day = rollUpDay(
      [
        fact('a', FactKind.ToolCall, 1, { name: 'mcp__github__x', detail: 'github', level: 'auto_low' }),
        fact('b', FactKind.ToolCall, 2, { name: 'mcp__github__x', detail: 'github', level: 'auto_low' }),
        fact('b', FactKind.ToolCall, 5, { name: 'mcp__linear__y', detail: 'linear', level: 'auto_low' }),
        fact('c', FactKind.ToolCall, 1, { name: 'Bash', level: 'auto_low' }),
        fact('a', FactKind.Hook, 1, { name: 'Stop', detail: '', command: 'b' }),
        fact('b', FactKind.Hook, 1, { name: 'Stop', detail: '', command: 'a' }),
        fact('c', FactKind.Hook, 3, { name: 'PostToolUse', detail: 'Edit', command: 'lint' }),
        fact('c', FactKind.Hook, 1, { name: 'PostToolUse', detail: 'Write', command: 'lint' }),
      ],
      [],
      2,
    );
    expect(day.tools.mcp_users_with_mcp).toBe(2);
    expect(day.tools.mcp_by_server).toEqual([
      { server: 'linear', invocations: 5 },
      { server: 'github', invocations: 3 },
    ]);
    expect(day.users.map((u) => u.metrics.mcp_calls)).toEqual([1, 7, 0]);
    expect(day.tools.hooks_invocations).toBe(6);
    expect(day.tools.hooks_by_event).toEqual([
      { event: 'PostToolUse', matcher: 'Edit', command: 'lint', count: 3 },
      { event: 'PostToolUse', matcher: 'Write', command: 'lint', count: 1 },
      { event: 'Stop', matcher: '', command: 'a', count: 1 },
      { event: 'Stop', matcher: '', command: 'b', count: 1 },
    ]);
    expect(day.tools.tool_autonomy_level_ratio).toEqual({ ...ZERO_LEVELS, auto_low: 1 });
    // No turns that day: no autonomy ratios.
    expect([day.tools.autonomy_ratio_avg, day.tools.autonomy_ratio_p50, day.tools.autonomy_ratio_p90]).toEqual([0, 0, 0]);
    expect(day.tools.tool_calls_per_session_avg).toBe(4.5);
  });

  it("takes p50 and p90 of the users' autonomy ratios by nearest rank", () => {
    // Ten users, user i with i tool calls per turn (1 turn), one user with 3 turns and 1 call (0.33).
    const facts = Array.from({ length: 10 }, (_, i) => [
      fact(`u${String(i).padStart(2, '0')}`, FactKind.UserMessage, 1, { client: 'web', level: 'auto-low' }),
      fact(`u${String(i).padStart(2, '0')}`, FactKind.ToolCall, i + 1, { name: 'Bash', level: 'auto_low' }),
    ]).flat();
    facts.push(fact('x', FactKind.UserMessage, 3, { client: 'web', level: 'auto-low' }), fact('x', FactKind.ToolCall, 1, { name: 'Bash', level: 'auto_low' }));
    const { tools } = rollUpDay(facts, [], 11);
    // Sorted: 1/3, 1, 2, ..., 10 (11 values): p50 the 6th (5), p90 the 10th (9); average (1/3 + 55) / 11 = 5.03.
    expect(tools.autonomy_ratio_p50).toBe(5);
    expect(tools.autonomy_ratio_p90).toBe(9);
    expect(tools.autonomy_ratio_avg).toBe(5.03);
    expect(tools.web_users).toBe(11);
  });
});
