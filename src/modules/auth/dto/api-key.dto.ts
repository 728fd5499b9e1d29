import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsISO8601, IsOptional } from 'class-validator';
import { IsDisplayName } from '../../../platform/http/display-name';
import { PageQueryDto, PaginationDto } from '../../../platform/http/pagination';

export class CreateApiKeyDto {
  @ApiProperty({ minLength: 1, maxLength: 100, example: 'CI pipeline' })
  @IsDisplayName('a name for the key', 100, 'CI pipeline')
  name: string;

  @ApiPropertyOptional({
    format: 'date-time',
    description: 'When the key stops working (ISO 8601, in the future). Omit for a key that lasts until revoked.',
    example: '2027-01-01T00:00:00Z',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  expiresAt?: string;
}

export class ListApiKeysQueryDto extends PageQueryDto {
  @ApiPropertyOptional({
    enum: ['own', 'organization'],
    default: 'own',
    description: '`organization` lists every key of the organization: owners and managers only (403 otherwise).',
  })
  @IsOptional()
  @IsIn(['own', 'organization'])
  scope?: 'own' | 'organization';
}

export class ApiKeyView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ description: 'The first characters of the key, to recognise it.', example: 'apk_Xk3r9QaZ' })
  prefix: string;

  @ApiProperty({ format: 'uuid', description: 'The user the key acts as.' })
  userId: string;

  @ApiProperty({ description: 'Unix ms.' })
  createdAt: number;

  @ApiProperty({ type: Number, nullable: true, description: 'Unix ms; updated at most once a minute.' })
  lastUsedAt: number | null;

  @ApiProperty({ type: Number, nullable: true, description: 'Unix ms.' })
  expiresAt: number | null;

  @ApiProperty({ type: Number, nullable: true, description: 'Unix ms; a revoked key answers 401 at once.' })
  revokedAt: number | null;
}

export class CreatedApiKeyView extends ApiKeyView {
  @ApiProperty({ description: 'The key itself. Shown only in this response: store it now.', example: 'apk_Xk3r9QaZ...' })
  key: string;
}

export class ApiKeyListView {
  @ApiProperty({ type: [ApiKeyView] })
  apiKeys: ApiKeyView[];

  @ApiProperty({ type: PaginationDto })
  pagination: PaginationDto;
}
