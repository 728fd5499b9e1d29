import type { Block, WireMessage } from './blocks';

export type PlanStatus = 'pending' | 'in_progress' | 'completed';
export interface PlanItem {
  content: string;
  status: PlanStatus;
  activeForm?: string;
}

/** The plan tool of the agent: its calls hold the whole to-do list each time. */
export const PLAN_TOOL = 'TodoWrite';
const STATUSES = new Set<string>(['pending', 'in_progress', 'completed']);

/** The items of a plan tool call's input, or null when it holds none the console can show. */
export function planOf(block: Block): PlanItem[] | null {
  if (block.type !== 'tool_use' || block.name !== PLAN_TOOL) return null;
  const todos = (block.input as { todos?: unknown }).todos;
  if (!Array.isArray(todos)) return null;
  const items = todos.flatMap((todo): PlanItem[] => {
    const { content, status, activeForm } = (todo ?? {}) as Record<string, unknown>;
    return typeof content === 'string' && typeof status === 'string' && STATUSES.has(status)
      ? [{ content, status: status as PlanStatus, ...(typeof activeForm === 'string' ? { activeForm } : {}) }]
      : [];
  });
  return items.length ? items : null;
}

/** The session's plan: the last plan the agent wrote, in the messages read so far. */
export function latestPlan(messages: WireMessage[]): PlanItem[] | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const blocks = messages[i].content;
    for (let j = blocks.length - 1; j >= 0; j--) {
      const plan = planOf(blocks[j]);
      if (plan) return plan;
    }
  }
  return null;
}
