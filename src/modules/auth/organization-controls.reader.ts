import { Injectable } from '@nestjs/common';

/** The enterprise controls that Auth enforces. */
export interface AuthControls {
  restrictApiKeyCreationToManagers: boolean;
  restrictMemberVisibility: boolean;
}

/**
 * Where Auth reads an organization's enterprise controls. The EnterpriseControls module binds
 * its own implementation here; until it does, every organization has the defaults.
 */
export abstract class OrganizationControlsReader {
  abstract read(organizationId: string): Promise<AuthControls>;
}

@Injectable()
export class DefaultOrganizationControls extends OrganizationControlsReader {
  read(): Promise<AuthControls> {
    return Promise.resolve({ restrictApiKeyCreationToManagers: false, restrictMemberVisibility: false });
  }
}
