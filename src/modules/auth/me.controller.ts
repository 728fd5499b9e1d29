import { Controller, Get } from '@nestjs/common';
import { ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { V0_ERROR } from '../../platform/http/openapi';
import { ref } from '../../platform/http/json-schema';
import { ApiKeysService } from './api-keys.service';
import { Authenticated, CurrentPrincipal } from './auth.decorators';
import { Principal } from './domain/principal';
import { isAdmin } from './domain/role';
import { OrganizationsService } from './organizations.service';
import { MeView } from './schemas/auth-views';

/** Who a credential is (added; the spec has no such endpoint): the web console shows it once signed in. */
@ApiTags('Members')
@Controller('api/v0/me')
@Authenticated()
export class MeController {
  constructor(
    private readonly organizations: OrganizationsService,
    private readonly apiKeys: ApiKeysService,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Who you are',
    description:
      "The user this credential acts as, their role and organization, the credential itself, and what the rules let you do. Any role; a computer's agent token answers 403.",
  })
  @ApiOkResponse({ schema: ref('MeView') })
  @ApiForbiddenResponse({ description: "A computer's agent token (`computer_token_not_accepted`).", schema: V0_ERROR })
  async me(@CurrentPrincipal() principal: Principal): Promise<MeView> {
    const [organization, createApiKeys] = await Promise.all([
      this.organizations.requireOrganizationById(principal.organizationId),
      this.apiKeys.mayCreate(principal),
    ]);
    const { credential } = principal;
    return {
      user: { id: principal.userId, email: principal.email, name: principal.name, role: principal.role },
      organization: { id: organization.id, slug: organization.slug, name: organization.name },
      credential: credential.kind === 'api_key' ? { kind: 'api_key', apiKeyId: credential.apiKeyId } : { kind: 'jwt' },
      can: { createApiKeys, manageOrganizationApiKeys: isAdmin(principal.role) },
    };
  }
}
