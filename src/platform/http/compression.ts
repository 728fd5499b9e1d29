import compress from '@fastify/compress';
import type { FastifyInstance } from 'fastify';
import { constants } from 'node:zlib';

/** Answers at least this large are compressed for a client that accepts it; below, the CPU costs more than the bytes. */
export const COMPRESS_FROM_BYTES = 16 * 1024;

/**
 * Large answers (a 90-day analytics range, long pages, the OpenAPI document) are compressed, with brotli or gzip as
 * the client accepts, at their fastest levels: a 2.8 MB tokens answer takes a few milliseconds and shrinks about six
 * times. What is compressed already (the console's assets) and server-sent events (the plugin leaves
 * text/event-stream alone) pass as they are. Request bodies are not inflated: a compressed body is refused as before,
 * and the body limits keep counting the bytes that arrive.
 */
export async function installCompression(fastify: FastifyInstance): Promise<void> {
  // Runs before the plugin's own onRoute hook: every route declines request decompression.
  fastify.addHook('onRoute', (route) => {
    route.decompress ??= false;
  });
  await fastify.register(compress, {
    global: true,
    threshold: COMPRESS_FROM_BYTES,
    encodings: ['br', 'gzip'],
    brotliOptions: { params: { [constants.BROTLI_PARAM_QUALITY]: 1 } },
    zlibOptions: { level: 1 },
  });
}
