import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** The spec's v0 error body, for OpenAPI. */
export class V0ErrorSchema {
  @ApiProperty({
    description: 'Human-readable message; names the offending field on validation errors.',
    example: 'limit: must be a whole number from 1 to 100',
  })
  detail: string;

  @ApiProperty({ description: 'HTTP status code.', example: 400 })
  status: number;

  @ApiProperty({ description: 'HTTP status title.', example: 'Bad Request' })
  title: string;

  @ApiPropertyOptional({
    type: 'object',
    properties: {
      code: {
        type: 'string',
        description: 'A stable snake_case error code (e.g. `validation_failed`, `invalid_cursor`, `revoked_api_key`, `insufficient_role`).',
      },
      errors: {
        type: 'array',
        items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
        description: 'On validation errors: every problem.',
      },
    },
    // Some codes add details of their own (`too_many_long_polls`: `limit` and `max`).
    additionalProperties: true,
    description: 'What a program reads of the error: its `code`, and the details some codes add.',
    example: { code: 'validation_failed', errors: [{ field: 'limit', message: 'must be a whole number from 1 to 100' }] },
  })
  metadata?: Record<string, unknown>;
}

/** The analytics error body (readiness answers the same, satisfying both documents). */
export class RequestIdErrorSchema {
  @ApiProperty({ example: 'Bad Request' })
  title: string;

  @ApiProperty({ example: 'startDate: must be a date in YYYY-MM-DD format' })
  detail: string;

  @ApiProperty({ example: 400 })
  status: number;

  @ApiProperty({ example: 'req_4f0c2d1e9b7a4c55a1d3e2f1a0b9c8d7' })
  requestId: string;
}
