import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PageQueryDto } from '../../../platform/http/pagination';

const COMPUTER_ID_DESCRIPTION = 'Ask this computer directly: only sessions connected to it are answered. It must be a computer of your organization, else 404.';

export class ListSessionsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ description: COMPUTER_ID_DESCRIPTION })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  computerId?: string;
}

export class GetSessionQueryDto {
  @ApiPropertyOptional({ description: COMPUTER_ID_DESCRIPTION })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  computerId?: string;
}

export const MESSAGE_ROLE_FILTERS = ['user', 'assistant', 'tool'] as const;
export const MESSAGE_ORDERS = ['oldest', 'newest'] as const;

export class ListMessagesQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ description: COMPUTER_ID_DESCRIPTION })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  computerId?: string;

  @ApiPropertyOptional({ enum: MESSAGE_ROLE_FILTERS, description: 'Only messages of this role.' })
  @IsOptional()
  @IsIn(MESSAGE_ROLE_FILTERS)
  role?: (typeof MESSAGE_ROLE_FILTERS)[number];

  @ApiPropertyOptional({
    enum: MESSAGE_ORDERS,
    default: 'oldest',
    description:
      'Not in the spec. `oldest` (default): conversation order, oldest first. `newest`: newest first, so a client can show the latest ' +
      'messages and page back through history. A cursor belongs to its order: one from the other order answers 400.',
  })
  @IsOptional()
  @IsIn(MESSAGE_ORDERS)
  order?: (typeof MESSAGE_ORDERS)[number];
}

export class TurnConversationQueryDto extends PageQueryDto {
  // No length limit: any string that is not the running turn is 409 turn_not_active, as on the other agent endpoints.
  @ApiProperty({ description: 'The running turn the caller holds (from its claim).' })
  @IsString()
  turnId!: string;
}

const WAIT_MS_PATTERN = /^(30000|[12][0-9]{4}|[1-9][0-9]{0,3}|0)$/;

export class AwaitToolApprovalQueryDto {
  @ApiProperty({ description: 'The running turn the caller holds (from its claim), which asked for the approval.' })
  @IsString()
  turnId!: string;

  @ApiPropertyOptional({
    type: String,
    pattern: WAIT_MS_PATTERN.source,
    description: 'Wait up to this long (ms, a whole number from 0 to 30000) for the decision when there is none yet. Default 0: answer at once.',
  })
  @IsOptional()
  @IsString()
  @Matches(WAIT_MS_PATTERN, { message: 'must be a whole number of milliseconds from 0 to 30000' })
  waitMs?: string;

  get waitMilliseconds(): number {
    return this.waitMs === undefined ? 0 : Number(this.waitMs);
  }
}
