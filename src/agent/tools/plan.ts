import { defineTool, ToolError } from './common';

/** Items a plan may hold. */
export const PLAN_MAX_ITEMS = 50;
const STATUSES = ['pending', 'in_progress', 'completed'] as const;

/**
 * The plan tool (Claude Code's `TodoWrite`): the agent writes its whole to-do list, each item pending, in
 * progress or completed. Each call is a message of the session like any tool call, so the list's every change is
 * on the session's event stream, and the console shows the latest as the session's plan. It changes no file.
 */
export const planTool = defineTool({
  name: 'TodoWrite',
  description: [
    'Writes your plan for the task as a to-do list, the whole list each time: use it for work of three steps or more, before you start, and again',
    'whenever an item starts or is done, so that the person following the session sees where you are. One item at most is in_progress.',
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      todos: {
        type: 'array',
        maxItems: PLAN_MAX_ITEMS,
        items: {
          type: 'object',
          properties: {
            content: { type: 'string', description: 'The step, in the imperative ("Run the tests").' },
            status: { type: 'string', enum: [...STATUSES] },
            activeForm: { type: 'string', description: 'The step while it is under way ("Running the tests").' },
          },
          required: ['content', 'status'],
          additionalProperties: false,
        },
      },
    },
    required: ['todos'],
    additionalProperties: false,
  },
  async run(input) {
    const todos = input.todos;
    if (!Array.isArray(todos)) throw new ToolError('TodoWrite needs "todos": the whole list, an array of {content, status}');
    if (todos.length > PLAN_MAX_ITEMS) throw new ToolError(`A plan holds at most ${PLAN_MAX_ITEMS} items; this one has ${todos.length}`);
    const items = todos.map((todo: unknown, i) => {
      const { content, status, activeForm } = (todo ?? {}) as Record<string, unknown>;
      if (typeof content !== 'string' || content.trim() === '') throw new ToolError(`todos[${i}].content must be a non-empty string`);
      if (!STATUSES.includes(status as (typeof STATUSES)[number])) throw new ToolError(`todos[${i}].status must be one of ${STATUSES.join(', ')}`);
      return {
        content: content.trim(),
        status: status as (typeof STATUSES)[number],
        activeForm: typeof activeForm === 'string' ? activeForm.trim() : undefined,
      };
    });
    const current = items.filter((item) => item.status === 'in_progress');
    if (current.length > 1) throw new ToolError(`Only one item may be in_progress at a time; ${current.length} are`);
    const done = items.filter((item) => item.status === 'completed').length;
    const now = current[0] ? ` Now: ${current[0].activeForm || current[0].content}.` : '';
    return `The plan has ${items.length} ${items.length === 1 ? 'item' : 'items'}, ${done} done.${now}`;
  },
});
