import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { PageQueryDto } from '../../../platform/http/pagination';

const COMPUTER_ID_DESCRIPTION =
  'Ask this computer directly: only sessions connected to it are answered. It must be a computer of your organization, else 404.';

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
}

export class TurnConversationQueryDto extends PageQueryDto {
  // No length limit: any string that is not the running turn is 409 turn_not_active, as on the other agent endpoints.
  @ApiProperty({ description: 'The running turn the caller holds (from its claim).' })
  @IsString()
  turnId!: string;
}
