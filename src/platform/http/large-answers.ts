import type { FastifyInstance, FastifyReply, FastifyRequest, preSerializationAsyncHookHandler } from 'fastify';
import { setImmediate } from 'node:timers/promises';
import { EdgeRouteConfig } from './route-config';

/** How long serializing may hold the event loop before it lets other requests run. */
const SLICE_MS = 4;
/** Arrays and objects are serialized a member at a time down to this depth; below, each member at once. */
const PIECEWISE_DEPTH = 3;

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

/** `JSON.stringify(value)`, built a piece at a time and pausing for other work after each SLICE_MS of it. */
export async function stringifyInSlices(value: unknown): Promise<string> {
  const parts: string[] = [];
  let sliceStarted = performance.now();
  const pause = async () => {
    if (performance.now() - sliceStarted < SLICE_MS) return;
    await setImmediate();
    sliceStarted = performance.now();
  };
  const write = async (item: unknown, depth: number, inArray: boolean): Promise<void> => {
    const own = item !== null && typeof item === 'object' && typeof (item as { toJSON?: unknown }).toJSON !== 'function';
    if (!own || depth >= PIECEWISE_DEPTH) {
      // What JSON.stringify writes for a value it leaves out: null in an array (the caller skips it in an object).
      parts.push(JSON.stringify(item) ?? (inArray ? 'null' : ''));
      await pause();
      return;
    }
    if (Array.isArray(item)) {
      parts.push('[');
      for (let i = 0; i < item.length; i++) {
        if (i > 0) parts.push(',');
        await write(item[i], depth + 1, true);
      }
      parts.push(']');
      return;
    }
    parts.push('{');
    let first = true;
    for (const [key, member] of Object.entries(item)) {
      if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
      parts.push(`${first ? '' : ','}${JSON.stringify(key)}:`);
      first = false;
      await write(member, depth + 1, false);
    }
    parts.push('}');
  };
  await write(value, 0, false);
  return parts.join('');
}
