import { createHash } from 'node:crypto';
import { RequestError, RequestErrorCode } from './domain-error';

export type CursorField = 'string' | 'number' | 'uuid';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Opaque keyset cursors: base64url of `[list, ...sortKey]` and a checksum of it. Decoding checks
 * the checksum, that the cursor was issued by the same list, and that every key has the type the
 * sort expects, so an altered or foreign cursor is a 400 rather than another page. The checksum
 * catches alteration, not forgery: a cursor is a position in the caller's own data, every query
 * is scoped to the caller's organization, so a forged one could reveal nothing more.
 */
export function encodeCursor(list: string, key: ReadonlyArray<string | number>): string {
  return sealCursor([list, ...key]);
}

/** Any JSON value as a checksummed cursor; tests use it to build well-sealed but ill-shaped ones. */
export function sealCursor(value: unknown): string {
  const payload = Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
  return `${payload}.${checksum(payload)}`;
}

export function decodeCursor(list: string, cursor: string, shape: readonly CursorField[]): Array<string | number> {
  let parsed: unknown;
  try {
    const match = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(cursor);
    if (!match || checksum(match[1]) !== match[2]) throw new Error('altered');
    parsed = JSON.parse(Buffer.from(match[1], 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (!Array.isArray(parsed) || parsed.length !== shape.length + 1 || parsed[0] !== list) throw invalidCursor();
  const key = parsed.slice(1) as unknown[];
  key.forEach((value, i) => {
    const valid =
      shape[i] === 'number'
        ? typeof value === 'number' && Number.isSafeInteger(value)
        : typeof value === 'string' && value.length > 0 && value.length <= 256 && (shape[i] !== 'uuid' || UUID.test(value));
    if (!valid) throw invalidCursor();
  });
  return key as Array<string | number>;
}

export function invalidCursor(): RequestError {
  return new RequestError(RequestErrorCode.InvalidCursor, 'cursor: is not a cursor issued by this list; pass the nextCursor of the previous page unchanged', {
    errors: [{ field: 'cursor', message: 'is not a valid cursor for this list' }],
  });
}

function checksum(payload: string): string {
  return createHash('sha256').update(`cursor:${payload}`).digest('base64url').slice(0, 16);
}
