import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';

export const DEFAULT_PAGE_LIMIT = 20;
export const MAX_PAGE_LIMIT = 100;

/** `limit` and `cursor` of every paged v0 list. The spec types limit as a string. */
export class PageQueryDto {
  @ApiPropertyOptional({
    type: String,
    pattern: '^(100|[1-9][0-9]?)$',
    default: String(DEFAULT_PAGE_LIMIT),
    description: 'Page size, a whole number from 1 to 100 written as a string. Anything else answers 400.',
  })
  @IsOptional()
  @IsString()
  @Matches(/^(100|[1-9][0-9]?)$/, { message: 'must be a whole number from 1 to 100' })
  limit?: string;

  @ApiPropertyOptional({
    description: 'The `nextCursor` of the previous page, unchanged. A cursor from another list, or altered, answers 400.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  cursor?: string;

  get pageSize(): number {
    return this.limit === undefined ? DEFAULT_PAGE_LIMIT : Number(this.limit);
  }
}

export class PaginationDto {
  @ApiProperty({ description: 'Whether more items follow this page.' })
  hasMore: boolean;

  @ApiProperty({ type: String, nullable: true, description: 'Cursor for the next page; null on the last page.' })
  nextCursor: string | null;
}

export interface Page<T> {
  items: T[];
  pagination: PaginationDto;
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
