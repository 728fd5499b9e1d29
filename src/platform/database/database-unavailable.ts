import { DomainError, ErrorKind } from '../http/domain-error';

/** How long a client is asked to wait before trying again while the database does not answer. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/** The database did not answer (lost connection, restart, shutdown): the request may succeed if tried again. */
export class DatabaseUnavailableError extends DomainError<'database_unavailable'> {
  readonly kind = ErrorKind.Unavailable;
  override retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS;

  constructor(detail = 'The database does not answer at the moment; try again shortly.') {
    super('database_unavailable', detail);
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

/** Whether an error says the database could not be reached, rather than that a statement was refused. */
export function isDatabaseUnavailable(error: unknown): boolean {
  // Duck-typed, not `instanceof Error`: Node's socket errors may come from another realm (a VM context, a worker).
  for (let cause = error, depth = 0; typeof cause === 'object' && cause !== null && depth < 4; depth++) {
    const { code, name, message, errors } = cause as { code?: unknown; name?: unknown; message?: unknown; errors?: unknown };
    if (typeof code === 'string' && (UNAVAILABLE_STATES.test(code) || SOCKET_ERRORS.has(code))) return true;
    if ((typeof name === 'string' && RELEASED_RUNNER.has(name)) || (typeof message === 'string' && LOST_CONNECTION.test(message))) return true;
    // Every address refused (Node's AggregateError when a host has several).
    if (Array.isArray(errors) && errors.length > 0 && errors.every((each) => isDatabaseUnavailable(each))) return true;
    // TypeORM wraps the driver's error (QueryFailedError.driverError); Node's own errors chain through `cause`.
    cause = (cause as { driverError?: unknown }).driverError ?? (cause as { cause?: unknown }).cause;
  }
  return false;
}
