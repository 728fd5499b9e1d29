import { RequestError, RequestErrorCode } from './domain-error';

export type CursorField = 'string' | 'number' | 'uuid';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Opaque keyset cursors: base64url of `[list, ...sortKey]`. Decoding checks that the cursor was
 * issued by the same list and that every key has the type the sort expects, so a tampered or
 * foreign cursor is a 400 rather than a wrong page.
 */
export function encodeCursor(list: string, key: ReadonlyArray<string | number>): string {
  return Buffer.from(JSON.stringify([list, ...key]), 'utf8').toString('base64url');
}

export function decodeCursor(list: string, cursor: string, shape: readonly CursorField[]): Array<string | number> {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
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

function invalidCursor(): RequestError {
  return new RequestError(
    RequestErrorCode.InvalidCursor,
    'cursor: is not a cursor issued by this list; pass the nextCursor of the previous page unchanged',
    { errors: [{ field: 'cursor', message: 'is not a valid cursor for this list' }] },
  );
}
