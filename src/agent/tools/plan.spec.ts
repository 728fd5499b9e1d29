import { PLAN_MAX_ITEMS, planTool } from './plan';

const run = (input: Record<string, unknown>) =>
  planTool.run(input, {
    workspace: '/nonexistent',
    policy: { commandAllowlist: [], commandDenylist: [], commandBlocklist: [] },
    signal: new AbortController().signal,
  });

describe('TodoWrite (the plan)', () => {
  it('takes the whole list and says where the work is', async () => {
    expect(
      await run({
        todos: [
          { content: 'Read the lockfile', status: 'completed' },
          { content: 'Run the tests', status: 'in_progress', activeForm: 'Running the tests' },
          { content: 'Open a pull request', status: 'pending' },
        ],
      }),
    ).toEqual({ isError: false, content: 'The plan has 3 items, 1 done. Now: Running the tests.' });
  });

  it('refuses a list it cannot show: two items under way, an unknown status, an empty step, too many items', async () => {
    const two = [
      { content: 'a', status: 'in_progress' },
      { content: 'b', status: 'in_progress' },
    ];
    expect(await run({ todos: two })).toEqual({ isError: true, content: 'Only one item may be in_progress at a time; 2 are' });
    expect((await run({ todos: [{ content: 'a', status: 'blocked' }] })).content).toBe('todos[0].status must be one of pending, in_progress, completed');
    expect((await run({ todos: [{ content: ' ', status: 'pending' }] })).content).toBe('todos[0].content must be a non-empty string');
    expect((await run({ todos: Array.from({ length: PLAN_MAX_ITEMS + 1 }, () => ({ content: 'a', status: 'pending' })) })).isError).toBe(true);
    expect((await run({})).content).toMatch(/^TodoWrite needs "todos"/);
  });
});
