import { ref, SchemaRegistry } from './json-schema';

/**
 * The shapes every module answers with: the two error bodies and a page's `pagination`. Published only
 * (nothing validates a request against them); modules point at them with `V0_ERROR`, `REQUEST_ID_ERROR`
 * and `ref('Pagination')`.
 */
export const httpSchemas = new SchemaRegistry('http').add({
  V0ErrorSchema: {
    type: 'object',
    description: "The spec's v0 error body.",
    required: ['detail', 'status', 'title'],
    properties: {
      detail: {
        type: 'string',
        description: 'Human-readable message; names the offending field on validation errors.',
        example: 'limit: must be a whole number from 1 to 100',
      },
      status: { type: 'number', description: 'HTTP status code.', example: 400 },
      title: { type: 'string', description: 'HTTP status title.', example: 'Bad Request' },
      metadata: {
        type: 'object',
        properties: {
          code: {
            type: 'string',
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
      },
    },
  },
  RequestIdErrorSchema: {
    type: 'object',
    description: 'The analytics error body (readiness answers the same, satisfying both documents).',
    required: ['title', 'detail', 'status', 'requestId'],
    properties: {
      title: { type: 'string', example: 'Bad Request' },
      detail: { type: 'string', example: 'startDate: must be a date in YYYY-MM-DD format' },
      status: { type: 'number', example: 400 },
      requestId: { type: 'string', example: 'req_4f0c2d1e9b7a4c55a1d3e2f1a0b9c8d7' },
    },
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

/**
 * What a relay answers when it passes another server's answer on (its `default` answer, and what any of its listed
 * statuses may carry besides this server's own error body): that server's JSON.
 */
export const PASSED_ON = { 'application/json': { schema: { type: 'object', description: "The other server's own JSON body, passed on with its status." } } };

/** The analytics and readiness error body. */
export const REQUEST_ID_ERROR = ref('RequestIdErrorSchema');
