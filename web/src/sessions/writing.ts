import type { MessageDelta } from '../api/session-events';

/** Which model call of which turn: each is a new assistant message. */
interface Step {
  turnId: string;
  step: number;
}

/** A tool running now: its output as it comes (`tool_output` deltas), until its result is stored. */
export interface RunningTool {
  toolUseId: string;
  toolName: string;
  output: string;
}

/**
 * What the agent is doing, from the session's `message.delta` events, until it is stored. `current` is the model call
 * being written (its answer's text and its thinking): one (turnId, step) at a time, a later step replacing an earlier
 * one; `done` is the last step whose message was stored (or whose turn ended): the API says a delta may still arrive
 * after the message, and those are dropped. `running` are the tools whose output comes, until their result is stored;
 * `ended` the latest calls whose result was, whose late output is dropped the same way.
 */
export interface Writing {
  current: (Step & { text: string; thinking: string }) | null;
  done: Step | null;
  running: RunningTool[];
  ended: string[];
}

export const NOT_WRITING: Writing = { current: null, done: null, running: [], ended: [] };

/** The live output kept of a tool: its end, as much as the agent keeps of a command's in its result. */
const OUTPUT_MAX_CHARS = 30_000;
/** Ended tool calls remembered, to drop their late output. */
const ENDED_KEPT = 100;

const sameTurn = (a: Step | null, turnId: string): a is Step => a !== null && a.turnId === turnId;

/** The state with one more piece: of the answer, its thinking, or a running tool's output. */
export function withDelta(state: Writing, delta: MessageDelta): Writing {
  // A server from before kinds sends only text, and no kind.
  const kind: string = delta.kind ?? 'text';
  if (kind === 'tool_output') return withOutput(state, delta);
  // A call's arguments are shown with the stored call, which follows at once.
  if (kind !== 'text' && kind !== 'thinking') return state;
  const { turnId, step, text } = delta;
  if (sameTurn(state.done, turnId) && step <= state.done.step) return state;
  const current = state.current;
  const piece = kind === 'text' ? { text, thinking: '' } : { text: '', thinking: text };
  if (sameTurn(current, turnId)) {
    if (step < current.step) return state;
    if (step === current.step) return { ...state, current: { ...current, text: current.text + piece.text, thinking: current.thinking + piece.thinking } };
  }
  return { ...state, current: { turnId, step, ...piece } };
}

function withOutput(state: Writing, delta: MessageDelta): Writing {
  const { toolUseId, toolName, text } = delta;
  if (!toolUseId || !toolName || state.ended.includes(toolUseId)) return state;
  const known = state.running.find((tool) => tool.toolUseId === toolUseId);
  const output = ((known?.output ?? '') + text).slice(-OUTPUT_MAX_CHARS);
  const running = known ? state.running.map((tool) => (tool === known ? { ...tool, output } : tool)) : [...state.running, { toolUseId, toolName, output }];
  return { ...state, running };
}

/** The message being written was stored (an assistant `message.added`): its provisional text and thinking go. */
export function finished(state: Writing): Writing {
  return state.current ? { ...state, current: null, done: { turnId: state.current.turnId, step: state.current.step } } : state;
}

/** These tool calls' results were stored (a tool `message.added`): their live output goes. */
export function toolsFinished(state: Writing, toolUseIds: readonly string[]): Writing {
  if (toolUseIds.length === 0) return state;
  return {
    ...state,
    running: state.running.filter((tool) => !toolUseIds.includes(tool.toolUseId)),
    ended: [...state.ended, ...toolUseIds].slice(-ENDED_KEPT),
  };
}

/**
 * The turn ended, or the stream dropped (pieces sent meanwhile are lost: rather than text with a hole, what was under
 * way waits for its message): nothing provisional is left.
 */
export function stopped(state: Writing): Writing {
  return toolsFinished(
    finished(state),
    state.running.map((tool) => tool.toolUseId),
  );
}
