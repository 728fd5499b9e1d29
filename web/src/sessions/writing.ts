import type { MessageDelta } from './live';

/** Which model call of which turn: each is a new assistant message. */
interface Step {
  turnId: string;
  step: number;
}

/**
 * The answer a model is writing, from the session's `message.delta` events, until its message is stored: one
 * (turnId, step) at a time, a later step replacing an earlier one. `done` is the last step whose message was stored
 * (or whose turn ended): the API says a delta may still arrive after the message, and those are dropped.
 */
export interface Writing {
  current: (Step & { text: string }) | null;
  done: Step | null;
}

export const NOT_WRITING: Writing = { current: null, done: null };

const sameTurn = (a: Step | null, turnId: string): a is Step => a !== null && a.turnId === turnId;

/** The state with one more piece of text. */
export function withDelta(state: Writing, delta: MessageDelta): Writing {
  const { turnId, step, text } = delta;
  if (sameTurn(state.done, turnId) && step <= state.done.step) return state;
  const current = state.current;
  if (sameTurn(current, turnId)) {
    if (step < current.step) return state;
    if (step === current.step) return { ...state, current: { ...current, text: current.text + text } };
  }
  return { ...state, current: { turnId, step, text } };
}

/** The message being written was stored (an assistant `message.added`), or the turn ended: the provisional text goes. */
export function finished(state: Writing): Writing {
  return state.current ? { current: null, done: { turnId: state.current.turnId, step: state.current.step } } : state;
}
