import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PageQueryDto } from '../../../platform/http/pagination';

const SEQ = /^(0|[1-9][0-9]{0,14})$/;
const SEQ_MESSAGE = 'must be an event sequence number (a whole number, 0 or more)';
/** A comma-separated list of event types, e.g. `message.added,session.status_changed`. */
const TYPE_LIST = /^[a-z_.]{1,64}(,[a-z_.]{1,64}){0,31}$/;

export class EventStreamQueryDto extends PageQueryDto {
  @ApiPropertyOptional({
    type: String,
    description:
      'Start after this sequence number (`seq`, the SSE `id`): the events after it, oldest first. `0` starts at the oldest event kept. ' +
      'A stream without it starts with the next event (live only); a list starts at the oldest kept. On a stream, a `Last-Event-ID` header wins over it. ' +
      'Older than the oldest event kept: 410 `event_expired` (`metadata.oldestId`). Not with `cursor`.',
    example: '42',
  })
  @IsOptional()
  @IsString()
  @Matches(SEQ, { message: SEQ_MESSAGE })
  after?: string;

  @ApiPropertyOptional({
    description: 'Only events of these types, comma-separated (e.g. `message.added,session.status_changed`). An unknown type answers 400.',
  })
  @IsOptional()
  @IsString()
  @Matches(TYPE_LIST, { message: 'must be event types separated by commas' })
  types?: string;
}

export const AUDIT_FORMATS = ['json', 'ndjson'] as const;

export class AuditLogQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ description: 'Only entries of these event types, comma-separated. An unknown type answers 400.' })
  @IsOptional()
  @IsString()
  @Matches(TYPE_LIST, { message: 'must be event types separated by commas' })
  type?: string;

  @ApiPropertyOptional({ description: "Only what this user did (`actor.userId`; for an agent token, the computer's owner).", format: 'uuid' })
  @IsOptional()
  @IsString()
  @Matches(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, { message: 'must be a user id (a UUID)' })
  actorUserId?: string;

  @ApiPropertyOptional({
    description: 'Only entries at or after this time: Unix ms, or an ISO 8601 date-time with its offset.',
    example: '2026-01-01T00:00:00Z',
  })
  @IsOptional()
  @IsString()
  @MaxLength(40)
  since?: string;

  @ApiPropertyOptional({ description: 'Only entries before this time: Unix ms, or an ISO 8601 date-time with its offset.', example: '1767225600000' })
  @IsOptional()
  @IsString()
  @MaxLength(40)
  until?: string;

  @ApiPropertyOptional({
    enum: AUDIT_FORMATS,
    description:
      '`ndjson`: every matching entry, one JSON object a line, newest first, streamed (as `Accept: application/x-ndjson`); `limit` and `cursor` then do not apply.',
  })
  @IsOptional()
  @IsIn(AUDIT_FORMATS)
  format?: (typeof AUDIT_FORMATS)[number];
}
