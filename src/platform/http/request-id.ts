import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const REQUEST_ID_HEADER = 'x-request-id';
const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The id of a request: the caller's `x-request-id` when it is a sane token, else a new one.
 */
export function assignRequestId(raw: IncomingMessage): string {
  const incoming = raw.headers[REQUEST_ID_HEADER];
  return typeof incoming === 'string' && ACCEPTABLE_ID.test(incoming) ? incoming : newRequestId();
}

export function newRequestId(): string {
  return `req_${randomUUID().replaceAll('-', '')}`;
}
