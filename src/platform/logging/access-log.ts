import { Logger } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { errorBody } from '../http/error-body';
import { newRequestId } from '../http/request-id';

/** Who made a request, as far as authentication got: ids only. */
export interface RequestIdentity {
  organizationId?: string;
  credentialId?: string;
}

const logger = new Logger('Access');

/** pino's numbers for the levels, to skip building lines that would not be written. */
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };
/** A 502, 503 or 504 is an answer the API describes (a vendor or the database away, the instance stopping), not a defect: a warning. */
const levelOf = (status: number | null) =>
  status === null || status < 400 ? LEVELS.info : status < 500 || (status >= 502 && status <= 504) ? LEVELS.warn : LEVELS.error;

/**
 * One line per request, when it is answered or when its client goes away: the request id, the
 * method, the route's pattern (never the query string, which may hold cursors and emails), the
 * status, how long it took, the bytes both ways, and who asked. Never a header value or a body.
 */
export function installAccessLog(fastify: FastifyInstance, logLevel: string, identify: (request: FastifyRequest) => RequestIdentity): void {
  const threshold = LEVELS[logLevel] ?? LEVELS.info;
  const started = new WeakMap<FastifyRequest, number>();
  const log = (request: FastifyRequest, reply: FastifyReply | null) => {
    const start = started.get(request);
    if (start === undefined) return;
    started.delete(request);
    const status = reply?.statusCode ?? null;
    if (levelOf(status) < threshold) return;
    const route = request.routeOptions.url ?? null;
    const line = {
      requestId: request.id,
      method: request.method,
      route,
      status,
      durationMs: Math.round((performance.now() - start) * 10) / 10,
      bytesIn: numberOrNull(request.headers['content-length']),
      bytesOut: reply ? numberOrNull(reply.getHeader('content-length')) : null,
      ...identify(request),
      ip: request.ip,
      ...(reply ? {} : { aborted: true }),
    };
    write(line, `${request.method} ${route ?? '(no route)'} ${status ?? 'aborted by the client'} ${line.durationMs} ms ${request.id}`);
  };
  fastify.addHook('onRequest', (request, reply, done) => {
    started.set(request, performance.now());
    // A client that goes away before its answer (mid-upload, mid long poll) still gets its line.
    if (threshold <= LEVELS.info) {
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) log(request, null);
      });
    }
    done();
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    log(request, reply);
    done();
  });
}

/** A request Fastify refuses before routing (a malformed percent-escape in its path). */
export function logUnroutable(request: FastifyRequest, status: number, bytesOut: number): void {
  write(
    {
      requestId: request.id,
      method: request.method,
      route: null,
      status,
      durationMs: null,
      bytesIn: numberOrNull(request.headers['content-length']),
      bytesOut,
      ip: request.ip,
    },
    `${request.method} (unroutable) ${status}`,
  );
}

/** The v0 body of a request Node's parser refused (400, 431) or that did not arrive in time (408), whatever its path. */
export function clientErrorBody(status: 400 | 408 | 431, requestId: string) {
  const detail =
    status === 408
      ? 'The request did not arrive in time: send it whole within the request timeout.'
      : status === 431
        ? 'The request headers are too large.'
        : 'The request is not valid HTTP (check its Content-Length and headers).';
  return errorBody('v0', status, detail, requestId, { code: status === 408 ? 'request_timeout' : 'malformed_request' });
}

/**
 * Requests Node's parser refuses before Fastify sees them (a malformed Content-Length or header,
 * a body that does not arrive within the request timeout): answered in the v0 error body and
 * logged like any other request, without a route, method or credential.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  // The client is gone: nothing to answer, and a reset is not worth a line.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const requestId = newRequestId();
  const ip = socket.remoteAddress;
  const body = JSON.stringify(clientErrorBody(status, requestId));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${requestId}\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
  write(
    { requestId, method: null, route: null, status, durationMs: null, bytesIn: null, bytesOut: Buffer.byteLength(body), ip, reason: error.code ?? null },
    `client error ${status} (${error.code ?? 'unknown'})`,
  );
}

function write(line: Record<string, unknown>, message: string): void {
  const level = levelOf(line.status as number | null);
  if (level === LEVELS.info) logger.log(line, message);
  else if (level === LEVELS.warn) logger.warn(line, message);
  else logger.error(line, message);
}

function numberOrNull(value: unknown): number | null {
  const n = Number(Array.isArray(value) ? value[0] : value);
  return value === undefined || !Number.isFinite(n) ? null : n;
}
