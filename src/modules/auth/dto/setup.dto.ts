import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsEmail, IsNotEmpty, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';
import { IsDisplayName } from '../../../platform/http/display-name';
import { CreatedApiKeyView } from './api-key.dto';
import { MemberView } from './member.dto';

export class SetupOrganizationDto {
  @ApiProperty({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', example: 'acme', description: 'Lower-case letters, digits and -, at most 63.' })
  @Matches(/^[a-z0-9][a-z0-9-]{0,62}$/, { message: 'must be lower-case letters, digits and -, at most 63, starting with a letter or digit' })
  slug: string;

  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Acme' })
  @IsDisplayName("the organization's name", 200)
  name: string;
}

export class SetupOwnerDto {
  @ApiProperty({ format: 'email', maxLength: 254, example: 'you@acme.example' })
  @IsEmail()
  @MaxLength(254)
  email: string;

  @ApiProperty({ minLength: 1, maxLength: 200, example: 'You' })
  @IsDisplayName("the owner's name", 200)
  name: string;
}

export class SetupDto {
  @ApiProperty({ description: 'The token the server printed at start (`setup_...`).', example: 'setup_...' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  setupToken: string;

  @ApiProperty({ type: SetupOrganizationDto })
  @ValidateNested()
  @Type(() => SetupOrganizationDto)
  organization: SetupOrganizationDto;

  @ApiProperty({ type: SetupOwnerDto })
  @ValidateNested()
  @Type(() => SetupOwnerDto)
  owner: SetupOwnerDto;
}

export class SetupStatusView {
  @ApiProperty({ description: 'Whether the server still has no organization (the setup token works only then).' })
  needed: boolean;
}

export class SetupOrganizationView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty()
  slug: string;

  @ApiProperty()
  name: string;
}

export class SetupResultView {
  @ApiProperty({ type: SetupOrganizationView })
  organization: SetupOrganizationView;

  @ApiProperty({ type: MemberView })
  owner: MemberView;

  @ApiProperty({ type: CreatedApiKeyView, description: "The owner's first key: in this response only." })
  apiKey: CreatedApiKeyView;
}
