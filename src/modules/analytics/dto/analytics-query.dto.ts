import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { HISTORY_START, MAX_RANGE_DAYS } from '../domain/date-range';

/** `startDate` and `endDate` of every analytics endpoint; their rules are checked by `parseRange`. */
export class DateRangeQueryDto {
  @ApiProperty({ format: 'date', example: '2026-01-14', description: `YYYY-MM-DD, UTC. Data starts on ${HISTORY_START}: days before it are not answered.` })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  startDate?: string;

  @ApiProperty({ format: 'date', example: '2026-01-28', description: `YYYY-MM-DD, UTC, before today (data covers closed days). At most ${MAX_RANGE_DAYS} days after startDate.` })
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
