/** What went wrong, in the terms the HTTP layer maps to a status code. */
export enum ErrorKind {
  InvalidRequest = 'invalid_request',
  Unauthenticated = 'unauthenticated',
  Forbidden = 'forbidden',
  NotFound = 'not_found',
  Conflict = 'conflict',
  PreconditionFailed = 'precondition_failed',
  /** What was asked for existed but is gone for good (an event past retention). */
  Gone = 'gone',
  PayloadTooLarge = 'payload_too_large',
  UnsupportedMediaType = 'unsupported_media_type',
  Unprocessable = 'unprocessable',
  /** A per-client limit (rate, concurrency, quota): the body names which; `Retry-After` says when to try again where it is known. */
  TooManyRequests = 'too_many_requests',
  Unavailable = 'unavailable',
  /** Another server the request needed answered in a way that cannot be passed on. */
  BadGateway = 'bad_gateway',
  /** Another server the request needed did not answer in time. */
  GatewayTimeout = 'gateway_timeout',
}

/**
 * Base of every module's error class. Services throw these, never HttpException;
 * the exception filter turns `kind` into a status and `code` into `metadata.code`.
 */
export abstract class DomainError<Code extends string = string> extends Error {
  abstract readonly kind: ErrorKind;
  /** Sent as `Retry-After` (seconds), where the caller can know when trying again may succeed. */
  retryAfterSeconds?: number;

  constructor(
    readonly code: Code,
    message: string,
    readonly metadata: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Errors of the shared HTTP conventions (validation, pagination, content type). */
export enum RequestErrorCode {
  ValidationFailed = 'validation_failed',
  InvalidCursor = 'invalid_cursor',
  InvalidJson = 'invalid_json',
  JsonTooDeep = 'json_too_deep',
  JsonTooManyValues = 'json_too_many_values',
  UnsupportedMediaType = 'unsupported_media_type',
  PayloadTooLarge = 'payload_too_large',
  RouteNotFound = 'route_not_found',
}

export class RequestError extends DomainError<RequestErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case RequestErrorCode.ValidationFailed:
      case RequestErrorCode.InvalidCursor:
      case RequestErrorCode.InvalidJson:
      case RequestErrorCode.JsonTooDeep:
      case RequestErrorCode.JsonTooManyValues:
        return ErrorKind.InvalidRequest;
      case RequestErrorCode.UnsupportedMediaType:
        return ErrorKind.UnsupportedMediaType;
      case RequestErrorCode.PayloadTooLarge:
        return ErrorKind.PayloadTooLarge;
      case RequestErrorCode.RouteNotFound:
        return ErrorKind.NotFound;
    }
  }
}

export function statusOf(kind: ErrorKind): number {
  switch (kind) {
    case ErrorKind.InvalidRequest:
      return 400;
    case ErrorKind.Unauthenticated:
      return 401;
    case ErrorKind.Forbidden:
      return 403;
    case ErrorKind.NotFound:
      return 404;
    case ErrorKind.Conflict:
      return 409;
    case ErrorKind.PreconditionFailed:
      return 412;
    case ErrorKind.Gone:
      return 410;
    case ErrorKind.PayloadTooLarge:
      return 413;
    case ErrorKind.UnsupportedMediaType:
      return 415;
    case ErrorKind.Unprocessable:
      return 422;
    case ErrorKind.TooManyRequests:
      return 429;
    case ErrorKind.Unavailable:
      return 503;
    case ErrorKind.BadGateway:
      return 502;
    case ErrorKind.GatewayTimeout:
      return 504;
  }
}
