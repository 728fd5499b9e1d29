import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum EventsErrorCode {
  /** A resume (`Last-Event-ID`, `after`, a cursor) from before the oldest event kept. */
  EventExpired = 'event_expired',
  /** A `Last-Event-ID` or `after` that is not a sequence number of the log, or is past its end. */
  InvalidEventId = 'invalid_event_id',
  TooManyStreams = 'too_many_streams',
}

export class EventsError extends DomainError<EventsErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case EventsErrorCode.EventExpired:
        return ErrorKind.Gone;
      case EventsErrorCode.InvalidEventId:
        return ErrorKind.InvalidRequest;
      case EventsErrorCode.TooManyStreams:
        return ErrorKind.TooManyRequests;
    }
  }
}
