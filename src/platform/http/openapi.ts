import { applyDecorators } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import { DomainError, statusOf } from './domain-error';
import type { ErrorFlavour } from './error-body';
import { ref, SchemaObject, SchemaRegistry } from './json-schema';

/** A stable snake_case error code, as every error of the server names one (`ApiExceptionFilter`). */
const ERROR_CODE = '^[a-z][a-z0-9]*(_[a-z0-9]+)*$';

/** What the error bodies share, as the exception filter writes them (error-body.ts). */
const detail: SchemaObject = {
  type: 'string',
  description: 'Human-readable message; names the offending field on validation errors.',
  example: 'limit: must be a whole number from 1 to 100',
};
const status: SchemaObject = { type: 'integer', minimum: 400, maximum: 599, description: "HTTP status code, the same as the answer's.", example: 400 };
const title: SchemaObject = { type: 'string', description: 'HTTP status title.', example: 'Bad Request' };
/** The caller's `x-request-id` when it sent a sane one, else the server's (`req_` and 32 hex digits); also in the header. */
const requestId: SchemaObject = {
  type: 'string',
  pattern: '^[A-Za-z0-9._:-]{1,128}$',
  description: "The request's id, as the `x-request-id` header gives it: quote it when reporting an error.",
  example: 'req_4f0c2d1e9b7a4c55a1d3e2f1a0b9c8d7',
};
const metadata: SchemaObject = {
  type: 'object',
  required: ['code'],
  properties: {
    code: {
      type: 'string',
      pattern: ERROR_CODE,
      description: 'A stable snake_case error code (e.g. `validation_failed`, `invalid_cursor`, `revoked_api_key`, `insufficient_role`).',
    },
    errors: {
      type: 'array',
      maxItems: 20,
      items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
      description: 'On validation errors: the first 20 problems (field paths and messages quoted at most 200 and 500 characters long).',
    },
    errorCount: { type: 'integer', description: 'On validation errors: how many problems were found, listed or not.' },
  },
  // Some codes add details of their own (`too_many_long_polls`: `limit` and `max`).
  additionalProperties: true,
  description: 'What a program reads of the error: its `code`, and the details some codes add.',
  example: { code: 'validation_failed', errors: [{ field: 'limit', message: 'must be a whole number from 1 to 100' }] },
};

/**
 * The shapes every module answers with: the three error bodies and a page's `pagination`. Published only (nothing
 * validates a request against them). Which error body an answer carries depends on its path alone (`errorFlavourOf`),
 * so the document's error answers name the path's schema whatever a decorator says (`completeResponses`). Each lists
 * exactly what the server sends, all of it required: the server always sends it.
 */
export const httpSchemas = new SchemaRegistry('http').add({
  V0ErrorSchema: {
    type: 'object',
    description:
      "The spec's v0 error body (also the web application's `/settings` endpoints'). The spec makes `metadata` optional; this server always sends it, with a `code`.",
    required: ['detail', 'status', 'title', 'metadata'],
    additionalProperties: false,
    properties: { detail, status, title, metadata },
  },
  AnalyticsErrorSchema: {
    type: 'object',
    description: 'The analytics error body, as the spec and the reference analytics document give it.',
    required: ['title', 'detail', 'status', 'requestId'],
    additionalProperties: false,
    properties: { title, detail: { ...detail, example: 'startDate: must be a date in YYYY-MM-DD format' }, status, requestId },
  },
  ReadinessErrorSchema: {
    type: 'object',
    description:
      "The readiness error body: the reference readiness document's `{title, detail, status, requestId}` with the v0 body's `metadata`, so it satisfies both.",
    required: ['title', 'detail', 'status', 'requestId', 'metadata'],
    additionalProperties: false,
    properties: { title, detail, status, requestId, metadata },
  },
  Pagination: {
    type: 'object',
    required: ['hasMore', 'nextCursor'],
    properties: {
      hasMore: { type: 'boolean', description: 'Whether more items follow this page.' },
      nextCursor: { type: 'string', nullable: true, description: 'Cursor for the next page; null on the last page.' },
    },
  },
});

/** The v0 error body, for `@Api...Response({ description, schema: V0_ERROR })`. */
export const V0_ERROR = ref('V0ErrorSchema');
/** The analytics error body. */
export const ANALYTICS_ERROR = ref('AnalyticsErrorSchema');
/** The readiness error body. */
export const READINESS_ERROR = ref('ReadinessErrorSchema');

/** The error body each kind of path answers with. */
export const ERROR_SCHEMAS: Record<ErrorFlavour, { $ref: string }> = { v0: V0_ERROR, analytics: ANALYTICS_ERROR, readiness: READINESS_ERROR };

/**
 * What a relay answers when it passes another server's answer on (its `default` answer, and what any of its listed
 * statuses may carry besides this server's own error body): that server's JSON.
 */
export const PASSED_ON = { 'application/json': { schema: { type: 'object', description: "The other server's own JSON body, passed on with its status." } } };

/** An id for the document's examples (a UUIDv7, as the server makes them). */
export const EXAMPLE_ID = '0196f1d2-7c3a-7e0b-9f41-3a5c2b8d9e10';

/** Where the examples below wait on an operation until `completeResponses` and `addRequestExamples` put them in place. */
export const EXAMPLE_EXTENSIONS = { error: 'x-error-example-', sharedError: 'x-shared-error-example-', request: 'x-request-example' } as const;

/** Marks a load balancer's probe, which no rate limit counts (so its document lists no 429); `completeResponses` takes it off. */
export const PROBE_EXTENSION = 'x-probe';

/** What an example error body shows beside its status: `metadata.code`, `detail` and the rest of `metadata`. */
export interface ErrorExample {
  code: string;
  detail: string;
  metadata?: Record<string, unknown>;
}

function errorExamples(prefix: string, errors: DomainError[]) {
  return applyDecorators(
    ...errors.map((error) =>
      ApiExtension(`${prefix}${statusOf(error.kind)}`, { code: error.code, detail: error.message, metadata: error.metadata } satisfies ErrorExample),
    ),
  );
}

/**
 * The error each status of the route stands for in the document's example of that answer (on a controller: of each of
 * its routes, unless the route names another for the status). Give the error the route's service throws, made by the
 * module's own function where it has one (`sessionNotFound(EXAMPLE_ID)`), so the example is the body the route answers.
 * The answers every route may give (400 `validation_failed`, 401, 403 `computer_token_not_accepted`, 413, 415, 429
 * `rate_limited`) have examples of the platform's.
 */
export const ApiErrorExamples = (...errors: DomainError[]) => errorExamples(EXAMPLE_EXTENSIONS.error, errors);

/** The same, for a decorator many routes share (`@Authenticated`'s roles): used where neither the route nor its controller names one. */
export const ApiSharedErrorExamples = (...errors: DomainError[]) => errorExamples(EXAMPLE_EXTENSIONS.sharedError, errors);

/** The route's JSON body in the document's example ("Try it out"). */
export const ApiRequestExample = (example: Record<string, unknown>) => ApiExtension(EXAMPLE_EXTENSIONS.request, example);
