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

/**
 * A module's errors: for each, by the name code uses (`SessionNotFound`), the stable code its body's `metadata.code`
 * carries and the kind the exception filter answers it with (so its status, and `title` after it). Written
 * `{...} as const satisfies ErrorTable`; the codes, their type and the error class are taken from it (`codesOf`,
 * `CodeOf`, `errorClassOf`), so a code's kind is written once and never switched on.
 */
export type ErrorTable = Readonly<Record<string, { readonly code: string; readonly kind: ErrorKind }>>;

/** The codes of a table. */
export type CodeOf<Table extends ErrorTable> = Table[keyof Table]['code'];

/** The codes of a table by name, as code names them (`SessionsErrorCode.SessionNotFound` is `'session_not_found'`). */
export function codesOf<Table extends ErrorTable>(table: Table): { readonly [Name in keyof Table]: Table[Name]['code'] } {
  return Object.fromEntries(Object.entries(table).map(([name, { code }]) => [name, code])) as { [Name in keyof Table]: Table[Name]['code'] };
}

/** The base of a module's error class whose codes are the table's: `class SessionsError extends errorClassOf(SESSIONS_ERRORS) {}`. */
export function errorClassOf<Table extends ErrorTable>(table: Table) {
  const kinds = new Map<string, ErrorKind>(Object.values(table).map(({ code, kind }) => [code, kind]));
  return class extends DomainError<CodeOf<Table>> {
    get kind(): ErrorKind {
      return kinds.get(this.code)!;
    }
  };
}

/** Errors of the shared HTTP conventions (validation, pagination, content type). */
const REQUEST_ERRORS = {
  ValidationFailed: { code: 'validation_failed', kind: ErrorKind.InvalidRequest },
  InvalidCursor: { code: 'invalid_cursor', kind: ErrorKind.InvalidRequest },
  InvalidJson: { code: 'invalid_json', kind: ErrorKind.InvalidRequest },
  JsonTooDeep: { code: 'json_too_deep', kind: ErrorKind.InvalidRequest },
  JsonTooManyValues: { code: 'json_too_many_values', kind: ErrorKind.InvalidRequest },
  UnsupportedMediaType: { code: 'unsupported_media_type', kind: ErrorKind.UnsupportedMediaType },
  PayloadTooLarge: { code: 'payload_too_large', kind: ErrorKind.PayloadTooLarge },
  RouteNotFound: { code: 'route_not_found', kind: ErrorKind.NotFound },
} as const satisfies ErrorTable;

export const RequestErrorCode = codesOf(REQUEST_ERRORS);
export type RequestErrorCode = CodeOf<typeof REQUEST_ERRORS>;

export class RequestError extends errorClassOf(REQUEST_ERRORS) {}

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
