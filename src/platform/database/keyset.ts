import { decodeCursor, encodeCursor, invalidCursor } from '../http/cursor';

/** The last instant a JavaScript Date can hold. */
const MAX_TIME = 8_640_000_000_000_000;

/**
 * Newest-first keyset paging over `(created_at, id)`: stable while rows are inserted between
 * requests (new rows sort before the cursor), and as fast on page 10,000 as on page 1.
 */
export class NewestFirst {
  constructor(private readonly list: string) {}

  /** The position a cursor names: rows strictly after it come next (`(created_at, id) < ($n, $m)`). */
  positionOf(cursor: string | undefined): { createdAt: Date; id: string } | undefined {
    if (cursor === undefined) return undefined;
    const [createdAt, id] = decodeCursor(this.list, cursor, ['number', 'uuid']);
    if ((createdAt as number) < 0 || (createdAt as number) > MAX_TIME) throw invalidCursor();
    return { createdAt: new Date(createdAt as number), id: id as string };
  }

  cursorOf(row: { createdAt: Date; id: string }): string {
    return encodeCursor(this.list, [row.createdAt.getTime(), row.id]);
  }
}
