import { DomainError, ErrorKind } from '../http/domain-error';

/** How long a client is asked to wait before trying again while the database does not answer. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;
/** How long while the database's disk is full: space comes back when an operator frees it, not in a moment. */
export const STORAGE_RETRY_AFTER_SECONDS = 30;

/** The database did not answer (lost connection, restart, shutdown): the request may succeed if tried again. */
export class DatabaseUnavailableError extends DomainError<'database_unavailable'> {
  readonly kind = ErrorKind.Unavailable;
  override retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS;

  constructor(detail = 'The database does not answer at the moment; try again shortly.') {
    super('database_unavailable', detail);
  }
}

/**
 * The database's disk is full: the write was rolled back whole, reads still work. A 503 with `Retry-After` rather than
 * a 507, so that clients which retry what is unavailable (the reference agent) keep their writes until space returns.
 */
export class StorageFullError extends DomainError<'storage_full'> {
  readonly kind = ErrorKind.Unavailable;
  override retryAfterSeconds = STORAGE_RETRY_AFTER_SECONDS;

  constructor() {
    super('storage_full', 'The server has no disk space left to store this, and nothing was changed; reads still work. Try again later.');
  }
}

/**
 * SQLSTATEs of a database that is going away or not reachable (not of a statement that failed):
 * connection exceptions (class 08), shutdowns (57P01 admin, 57P02 crash, 57P03 cannot connect now),
 * too many connections (53300).
 */
const UNAVAILABLE_STATES = /^(08...|57P0[123]|53300)$/;
/** Socket errors on the way to the database. */
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** What `pg`, `pg-pool` and TypeORM throw when the connection is lost or the pool is closing (they set no code). */
const LOST_CONNECTION =
  /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect|Cannot use a pool after calling end|Connection is not established)/;
const RELEASED_RUNNER = new Set(['QueryRunnerAlreadyReleasedError', 'QueryRunnerProviderAlreadyReleasedError', 'ConnectionIsNotSetError']);

/** SQLSTATE 53100 (disk_full: "could not extend file ... No space left on device"), or the errno itself. */
const STORAGE_FULL = new Set(['53100', 'ENOSPC']);

interface ErrorFields {
  code?: unknown;
  name?: unknown;
  message?: unknown;
  errors?: unknown;
}

/** Whether `error` or one of the errors it wraps matches. */
function anyCause(error: unknown, matches: (fields: ErrorFields) => boolean): boolean {
  // Duck-typed, not `instanceof Error`: Node's socket errors may come from another realm (a VM context, a worker).
  for (let cause = error, depth = 0; typeof cause === 'object' && cause !== null && depth < 4; depth++) {
    if (matches(cause as ErrorFields)) return true;
    // TypeORM wraps the driver's error (QueryFailedError.driverError); Node's own errors chain through `cause`.
    cause = (cause as { driverError?: unknown }).driverError ?? (cause as { cause?: unknown }).cause;
  }
  return false;
}

/** Whether an error says the database could not be reached, rather than that a statement was refused. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return anyCause(error, ({ code, name, message, errors }) => {
    if (typeof code === 'string' && (UNAVAILABLE_STATES.test(code) || SOCKET_ERRORS.has(code))) return true;
    if ((typeof name === 'string' && RELEASED_RUNNER.has(name)) || (typeof message === 'string' && LOST_CONNECTION.test(message))) return true;
    // Every address refused (Node's AggregateError when a host has several).
    return Array.isArray(errors) && errors.length > 0 && errors.every((each) => isDatabaseUnavailable(each));
  });
}

/** Whether an error says the database's disk is full. */
export function isStorageFull(error: unknown): boolean {
  return anyCause(error, ({ code }) => typeof code === 'string' && STORAGE_FULL.has(code));
}
