import { ApiProperty } from '@nestjs/swagger';
import { PaginationDto } from '../../../platform/http/pagination';

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
