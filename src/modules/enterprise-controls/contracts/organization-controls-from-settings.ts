import { Injectable } from '@nestjs/common';
import { OrganizationControls, OrganizationControlsReader } from '../../auth';
import { EnterpriseControlsService } from '../enterprise-controls.service';

/**
 * The controls take effect by being read: Auth, Sessions and Computers read them through these
 * contracts, always the revision in force (cached for CONTROLS_CACHE_MS, dropped on every revision).
 */
@Injectable()
export class OrganizationControlsFromSettings extends OrganizationControlsReader {
  constructor(private readonly controls: EnterpriseControlsService) {
    super();
  }

  async read(organizationId: string): Promise<OrganizationControls> {
    const { settings } = await this.controls.inForce(organizationId);
    return {
      restrictApiKeyCreationToManagers: settings.restrictApiKeyCreationToManagers,
      restrictMemberVisibility: settings.restrictMemberVisibility,
      managedComputersEnabled: settings.managedComputersEnabled,
      managedComputersAllowedEmails: settings.managedComputersAllowedEmails,
      byomComputersEnabled: settings.byomComputersEnabled,
      byomComputersAllowedEmails: settings.byomComputersAllowedEmails,
    };
  }
}
