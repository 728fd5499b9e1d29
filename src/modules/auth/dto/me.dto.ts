import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { MemberView } from './member.dto';
import { SetupOrganizationView } from './setup.dto';

/** You, as the members list shows you; `role` is read from the server at each request, not from the credential. */
export class MeUserView extends PickType(MemberView, ['id', 'email', 'name', 'role'] as const) {}

export class MeCredentialView {
  @ApiProperty({ enum: ['api_key', 'jwt'], description: 'How this request proved who you are.' })
  kind: 'api_key' | 'jwt';

  @ApiPropertyOptional({ format: 'uuid', description: 'The API key this request used (`kind: api_key`).' })
  apiKeyId?: string;
}

export class MeAbilitiesView {
  @ApiProperty({ description: 'Whether you may create API keys now (`restrictApiKeyCreationToManagers` limits it to owners and managers).' })
  createApiKeys: boolean;

  @ApiProperty({ description: 'Whether you may list and revoke every key of the organization (`scope=organization`): owners and managers.' })
  manageOrganizationApiKeys: boolean;
}

export class MeView {
  @ApiProperty({ type: MeUserView })
  user: MeUserView;

  @ApiProperty({ type: SetupOrganizationView })
  organization: SetupOrganizationView;

  @ApiProperty({ type: MeCredentialView })
  credential: MeCredentialView;

  @ApiProperty({ type: MeAbilitiesView, description: 'What the rules (roles, enterprise controls) let you do, so a client shows only what will work.' })
  can: MeAbilitiesView;
}
