import type { FastifyInstance, FastifyReply, FastifyRequest, preSerializationAsyncHookHandler } from 'fastify';
import { setImmediate } from 'node:timers/promises';
import { EdgeRouteConfig } from './route-config';

/** How long serializing may hold the event loop before it lets other requests run. */
const SLICE_MS = 4;
/**
 * Objects are written a member at a time down to this depth, arrays an element at a time one level deeper: a page's
 * messages (`messages[i]`, a claim's `work.messages[i]`) come one at a time, each whole. Finer pieces cost more than
 * they save: a member at a time, a page of 20 small messages cost 200 µs more CPU than one JSON.stringify.
 */
const PIECEWISE_OBJECT_DEPTH = 2;

/**
 * Answers of routes marked `largeAnswer` (pages of messages, up to MESSAGE_PAGE_MAX_BYTES) are serialized a message at a
 * time, letting other requests run every few milliseconds: a 16 MB page of small values took 260 ms to serialize in
 * one go, and every other client of the instance waited for it. The text is the one `JSON.stringify` makes. Only those
 * routes get the hook (the others pay nothing for it); it must be installed before the routes are.
 */
export function installLargeAnswers(fastify: FastifyInstance): void {
  fastify.addHook('onRoute', (route) => {
    if (!(route.config as EdgeRouteConfig | undefined)?.largeAnswer) return;
    const own = route.preSerialization === undefined ? [] : [route.preSerialization].flat();
    route.preSerialization = [...own, serializeInSlices as preSerializationAsyncHookHandler];
  });
}

async function serializeInSlices(_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (payload === null || typeof payload !== 'object') return payload;
  const text = await stringifyInSlices(payload);
  reply.serializer((serialized: unknown) => serialized as string);
  return text;
}

/**
 * `JSON.stringify(value)`, built a piece at a time and pausing for other work after each SLICE_MS of it. The pieces come
 * from a synchronous generator, so a small answer is written in one go, with no pause and no promise per piece.
 */
export async function stringifyInSlices(value: unknown): Promise<string> {
  const parts: string[] = [];
  let sliceStarted = performance.now();
  for (const part of pieces(value, 0, false)) {
    parts.push(part);
    if (performance.now() - sliceStarted >= SLICE_MS) {
      await setImmediate();
      sliceStarted = performance.now();
    }
  }
  return parts.join('');
}

/** The text of `item` as JSON.stringify writes it, in pieces (PIECEWISE_OBJECT_DEPTH). */
function* pieces(item: unknown, depth: number, inArray: boolean): Generator<string> {
  const own = item !== null && typeof item === 'object' && typeof (item as { toJSON?: unknown }).toJSON !== 'function';
  if (!own || depth > PIECEWISE_OBJECT_DEPTH || (depth === PIECEWISE_OBJECT_DEPTH && !Array.isArray(item))) {
    // What JSON.stringify writes for a value it leaves out: null in an array (the caller skips it in an object).
    yield JSON.stringify(item) ?? (inArray ? 'null' : '');
    return;
  }
  if (Array.isArray(item)) {
    yield '[';
    for (let i = 0; i < item.length; i++) {
      if (i > 0) yield ',';
      yield* pieces(item[i], depth + 1, true);
    }
    yield ']';
    return;
  }
  let separator = '{';
  for (const [key, member] of Object.entries(item)) {
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    yield `${separator}${JSON.stringify(key)}:`;
    separator = ',';
    yield* pieces(member, depth + 1, false);
  }
  yield separator === '{' ? '{}' : '}';
}
