import { codesOf, CodeOf, errorClassOf, ErrorKind, ErrorTable } from '../../../platform/http/domain-error';

const EVENTS_ERRORS = {
  /** A resume (`Last-Event-ID`, `after`, a cursor) from before the oldest event kept. */
  EventExpired: { code: 'event_expired', kind: ErrorKind.Gone },
  /** A `Last-Event-ID` or `after` that is not a sequence number of the log, or is past its end. */
  InvalidEventId: { code: 'invalid_event_id', kind: ErrorKind.InvalidRequest },
  TooManyStreams: { code: 'too_many_streams', kind: ErrorKind.TooManyRequests },
} as const satisfies ErrorTable;

export const EventsErrorCode = codesOf(EVENTS_ERRORS);
export type EventsErrorCode = CodeOf<typeof EVENTS_ERRORS>;

export class EventsError extends errorClassOf(EVENTS_ERRORS) {}
