import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { DEFAULT_HISTORY, DEFAULT_PAGE, MAX_HISTORY, MAX_PAGE } from '../domain/report';

/** The spec's query of the readiness list. `limit` is any positive integer; pages hold at most MAX_PAGE. */
export class ListReportsQueryDto {
  @ApiPropertyOptional({
    description: "Only this repository's reports (a `repoId` from `GET /api/organization/readiness-repositories`). An unknown id lists nothing.",
  })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  repoId?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: `Reports per page: any positive integer (0, negative or not a whole number is 400). Default ${DEFAULT_PAGE}; pages hold at most ${MAX_PAGE}, so a larger limit answers ${MAX_PAGE}.`,
  })
  @IsOptional()
  @IsString()
  @Matches(/^[1-9][0-9]{0,99}$/, { message: 'must be a positive integer' })
  limit?: string;

  @ApiPropertyOptional({
    format: 'uuid',
    description: "The `reportId` of the last report of the previous page. Unknown, another organization's or malformed: 400.",
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  startAfter?: string;
}

/** How many of a repository's newest reports its level history holds. */
export class LevelHistoryQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: `The newest reports to answer: any positive integer (0, negative or not a whole number is 400). Default ${DEFAULT_HISTORY}; at most ${MAX_HISTORY} are answered.`,
  })
  @IsOptional()
  @IsString()
  @Matches(/^[1-9][0-9]{0,99}$/, { message: 'must be a positive integer' })
  limit?: string;
}
