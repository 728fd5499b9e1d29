import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { decodeCursor, encodeCursor, invalidCursor } from '../http/cursor';

/** The last instant a JavaScript Date can hold. */
const MAX_TIME = 8_640_000_000_000_000;

/**
 * Newest-first keyset paging over `(created_at, id)`: stable while rows are inserted between
 * requests (new rows sort before the cursor), and as fast on page 10,000 as on page 1.
 */
export class NewestFirst {
  constructor(private readonly list: string) {}

  apply<T extends ObjectLiteral>(query: SelectQueryBuilder<T>, alias: string, cursor: string | undefined, limit: number): SelectQueryBuilder<T> {
    const after = this.positionOf(cursor);
    if (after) {
      query.andWhere(`(${alias}.created_at, ${alias}.id) < (:keysetCreatedAt, :keysetId)`, {
        keysetCreatedAt: after.createdAt,
        keysetId: after.id,
      });
    }
    return query
      .orderBy(`${alias}.created_at`, 'DESC')
      .addOrderBy(`${alias}.id`, 'DESC')
      .limit(limit + 1);
  }

  /** The position a cursor names, for queries written in SQL: rows strictly after it come next. */
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
