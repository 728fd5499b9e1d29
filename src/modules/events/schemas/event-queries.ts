import type { ApiSchema } from '../../../platform/http/api-schema';
import { SchemaObject } from '../../../platform/http/json-schema';
import { pageQuery } from '../../../platform/http/pagination';

/** A comma-separated list of event types, e.g. `message.added,session.status_changed`. */
const TYPE_LIST = '^[a-z_.]{1,64}(,[a-z_.]{1,64}){0,31}$';
const TYPE_LIST_PROBLEM = 'must be event types separated by commas';

export const AUDIT_FORMATS = ['json', 'ndjson'] as const;

/** The query strings of the event log, its streams and the audit log. */
export const EVENT_QUERIES: Record<string, SchemaObject> = {
  EventStreamQuery: pageQuery({
    after: {
      type: 'string',
      pattern: '^(0|[1-9][0-9]{0,14})$',
      'x-problem': 'must be an event sequence number (a whole number, 0 or more)',
      description:
        'Start after this sequence number (`seq`, the SSE `id`): the events after it, oldest first. `0` starts at the oldest event kept. ' +
        'A stream without it starts with the next event (live only); a list starts at the oldest kept. On a stream, a `Last-Event-ID` header wins over it. ' +
        'Older than the oldest event kept: 410 `event_expired` (`metadata.oldestId`). Not with `cursor`.',
      example: '42',
    },
    types: {
      type: 'string',
      pattern: TYPE_LIST,
      'x-problem': TYPE_LIST_PROBLEM,
      description:
        'Only events of these types, comma-separated (e.g. `message.added,session.status_changed`). An unknown type answers 400. ' +
        'Streams also know `message.delta` (live only, never in a list); without `types` a stream sends it too.',
    },
  }),
  AuditLogQuery: pageQuery({
    type: {
      type: 'string',
      pattern: TYPE_LIST,
      'x-problem': TYPE_LIST_PROBLEM,
      description: 'Only entries of these event types, comma-separated. An unknown type answers 400.',
    },
    actorUserId: {
      type: 'string',
      format: 'uuid',
      'x-problem': 'must be a user id (a UUID)',
      description: "Only what this user did (`actor.userId`; for an agent token, the computer's owner).",
    },
    since: {
      type: 'string',
      maxLength: 40,
      description: 'Only entries at or after this time: Unix ms, or an ISO 8601 date-time with its offset.',
      example: '2026-01-01T00:00:00Z',
    },
    until: {
      type: 'string',
      maxLength: 40,
      description: 'Only entries before this time: Unix ms, or an ISO 8601 date-time with its offset.',
      example: '1767225600000',
    },
    format: {
      type: 'string',
      enum: [...AUDIT_FORMATS],
      description:
        '`ndjson`: every matching entry, one JSON object a line, newest first, streamed (as `Accept: application/x-ndjson`); `limit` and `cursor` then do not apply.',
    },
  }),
};

export type EventStreamQuery = ApiSchema<'EventStreamQuery'>;
export type AuditLogQuery = ApiSchema<'AuditLogQuery'>;
