import { createHash } from 'node:crypto';
import { applyDecorators, createParamDecorator, ExecutionContext } from '@nestjs/common';
import { ApiHeader, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { stringify } from 'safe-stable-stringify';
import { ApiErrorExamples, V0_ERROR } from '../http/openapi';
import { validationError } from '../http/validation';
import { keyReused } from './idempotency.errors';
import type { IdempotentResult } from './idempotency.service';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';

/** A POST's `Idempotency-Key` and the fingerprint of the request it names. */
export interface IdempotentRequest {
  key: string;
  /** SHA-256 of method, path and the body with its keys sorted. */
  requestHash: string;
}

const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

/** Reads and checks the header; undefined when the request carries none. */
export const IdempotencyKey = createParamDecorator((_: unknown, context: ExecutionContext): IdempotentRequest | undefined => {
  const request = context.switchToHttp().getRequest<FastifyRequest>();
  const header = request.headers[IDEMPOTENCY_HEADER];
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !KEY_SHAPE.test(header)) {
    throw validationError([{ field: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters (a UUID is a good choice)' }]);
  }
  const fingerprint = `${request.method} ${request.url.split('?')[0]}\n${stringify(request.body ?? null)}`;
  return { key: header, requestHash: createHash('sha256').update(fingerprint).digest('hex') };
});

/** OpenAPI for the header, and for the 422 it can answer, on every POST that honours it. */
export const ApiIdempotencyKey = () =>
  applyDecorators(
    ApiUnprocessableEntityResponse({ description: 'The Idempotency-Key was used with another request (`idempotency_key_reused`).', schema: V0_ERROR }),
    ApiErrorExamples(keyReused()),
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description:
        'Makes a retry safe: a request repeating a key you used in the last 24 hours with the same body returns the first response ' +
        '(with `Idempotent-Replayed: true`) and does nothing again; the same key with a different request answers 422. ' +
        'Failed requests are not remembered, so their retry runs again. Keys are per user, 1-255 visible ASCII characters.',
    }),
  );

/** The body of an idempotent command's answer, marked `Idempotent-Replayed: true` when it is a stored one. */
export function respond<T>(reply: FastifyReply, result: IdempotentResult<T>): T {
  if (result.replayed) void reply.header(REPLAYED_HEADER, 'true');
  return result.body;
}
