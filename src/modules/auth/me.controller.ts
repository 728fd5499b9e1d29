import { Controller, Get } from '@nestjs/common';
import { ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { V0ErrorSchema } from '../../platform/http/openapi';
import { AuthRepository } from './auth.repository';
import { Authenticated, CurrentPrincipal } from './auth.decorators';
import { Principal } from './domain/principal';
import { isAdmin } from './domain/role';
import { OrganizationControlsReader } from './organization-controls.reader';
import { MeView } from './dto/me.dto';

/** Who a credential is (added; the spec has no such endpoint): the web console shows it once signed in. */
@ApiTags('Members')
@Controller('api/v0/me')
@Authenticated()
export class MeController {
  constructor(
    private readonly repository: AuthRepository,
    private readonly controls: OrganizationControlsReader,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Who you are',
    description: 'The user this credential acts as, their role and organization, the credential itself, and what the rules let you do. Any role; a computer\'s agent token answers 403.',
  })
  @ApiOkResponse({ type: MeView })
  @ApiForbiddenResponse({ description: 'A computer\'s agent token (`computer_token_not_accepted`).', type: V0ErrorSchema })
  async me(@CurrentPrincipal() principal: Principal): Promise<MeView> {
    // The credential was just accepted, so its organization exists (a removed user's credentials answer 401).
    const organization = (await this.repository.findOrganization(principal.organizationId))!;
    const { credential } = principal;
    const { restrictApiKeyCreationToManagers } = await this.controls.read(principal.organizationId);
    const admin = isAdmin(principal.role);
    return {
      user: { id: principal.userId, email: principal.email, name: principal.name, role: principal.role },
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      credential: credential.kind === 'api_key' ? { kind: 'api_key', apiKeyId: credential.apiKeyId } : { kind: 'jwt' },
      can: { createApiKeys: admin || !restrictApiKeyCreationToManagers, manageOrganizationApiKeys: admin },
    };
  }
}
