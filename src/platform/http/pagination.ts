import type { SchemaName } from './api-schema';
import { closedObject, ref, SchemaObject } from './json-schema';

export const DEFAULT_PAGE_LIMIT = 20;
export const MAX_PAGE_LIMIT = 100;

/** `limit` and `cursor` of every paged v0 list, as their query string gives them. */
export interface PageQuery {
  limit?: string;
  cursor?: string;
}

/** The schema of a paged list's query string: `limit` and `cursor`, beside the list's own filters. */
export function pageQuery(filters: Record<string, SchemaObject> = {}, required: string[] = []): SchemaObject {
  return closedObject(required, {
    ...filters,
    limit: {
      type: 'string',
      pattern: '^(100|[1-9][0-9]?)$',
      'x-problem': 'must be a whole number from 1 to 100',
      default: String(DEFAULT_PAGE_LIMIT),
      description: 'Page size, a whole number from 1 to 100 written as a string. Anything else answers 400.',
    },
    cursor: {
      type: 'string',
      maxLength: 1024,
      description: 'The `nextCursor` of the previous page, unchanged. A cursor from another list, or altered, answers 400.',
    },
  });
}

/** The page size a valid `limit` asks for. */
export function pageSize(query: { limit?: string }): number {
  return query.limit === undefined ? DEFAULT_PAGE_LIMIT : Number(query.limit);
}

/** A page's `pagination` (the `Pagination` schema). */
export interface Pagination {
  hasMore: boolean;
  nextCursor: string | null;
}

/** The OpenAPI schema of a page of `schema` items under `items`. */
export function pageOf(items: string, schema: SchemaName): SchemaObject {
  return {
    type: 'object',
    required: [items, 'pagination'],
    properties: { [items]: { type: 'array', items: ref(schema) }, pagination: ref('Pagination') },
  };
}

export interface Page<T> {
  items: T[];
  pagination: Pagination;
}

/**
 * Builds a page from `limit + 1` rows fetched in list order: the extra row only tells
 * whether another page exists, and the cursor names the last row returned.
 */
export function toPage<T>(rows: T[], limit: number, cursorOf: (row: T) => string): Page<T> {
  const items = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  return { items, pagination: { hasMore, nextCursor: hasMore ? cursorOf(items[items.length - 1]) : null } };
}
