import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../../platform/http/pagination';
import { HISTORY_START, MAX_RANGE_DAYS } from '../domain/date-range';

/** `startDate` and `endDate` of every analytics endpoint; their rules are checked by `parseRange`. */
export class DateRangeQueryDto {
  @ApiProperty({ format: 'date', example: '2026-01-14', description: `YYYY-MM-DD, UTC. Data starts on ${HISTORY_START}: days before it are not answered.` })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  startDate?: string;

  @ApiProperty({
    format: 'date',
    example: '2026-01-28',
    description: `YYYY-MM-DD, UTC, before today (data covers closed days). At most ${MAX_RANGE_DAYS} days after startDate.`,
  })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  endDate?: string;
}

export class TokensQueryDto extends DateRangeQueryDto {
  @ApiPropertyOptional({ enum: ['model'], description: 'Flatten `by_model` into rows `{date, group_key, billable_tokens, input_tokens, output_tokens}`.' })
  @IsOptional()
  @IsIn(['model'], { message: 'must be model' })
  group_by?: 'model';
}

export class ToolsQueryDto extends DateRangeQueryDto {
  @ApiPropertyOptional({ enum: ['tool_name'], description: 'Flatten `by_tool` into rows `{date, group_key, tool_calls}`.' })
  @IsOptional()
  @IsIn(['tool_name'], { message: 'must be tool_name' })
  group_by?: 'tool_name';
}

export class ActivityQueryDto extends DateRangeQueryDto {
  @ApiPropertyOptional({ enum: ['client'], description: 'Rows `{date, group_key, daily_active_users}`, one per client type with active users that day.' })
  @IsOptional()
  @IsIn(['client'], { message: 'must be client' })
  group_by?: 'client';
}

export class UsersQueryDto extends DateRangeQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_PAGE_LIMIT,
    default: DEFAULT_PAGE_LIMIT,
    description: 'Users per page (each with a row per day it was active). 1-100; anything else answers 400.',
  })
  @IsOptional()
  @IsString()
  @Matches(/^(100|[1-9][0-9]?)$/, { message: 'must be a whole number from 1 to 100' })
  limit?: string;

  @ApiPropertyOptional({ description: 'A user id: `meta.next_cursor` of the previous page, with the same dates and limit.' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  cursor?: string;

  get pageSize(): number {
    return this.limit === undefined ? DEFAULT_PAGE_LIMIT : Number(this.limit);
  }
}
