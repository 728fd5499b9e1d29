import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ROLES, Role } from '../domain/role';
import { SetupOrganizationView } from './setup.dto';

export class MeUserView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ format: 'email' })
  email: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ enum: ROLES, description: 'Your role now (read from the server, not the credential).' })
  role: Role;
}

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
