import { Injectable } from '@nestjs/common';

/** The enterprise controls that Auth enforces. */
export interface AuthControls {
  restrictApiKeyCreationToManagers: boolean;
  restrictMemberVisibility: boolean;
}

/** Every enterprise control another module enforces through this reader. */
export interface OrganizationControls extends AuthControls {
  managedComputersEnabled: boolean;
  /** Who may create managed computers; empty: every member who may create computers. */
  managedComputersAllowedEmails: string[];
  byomComputersEnabled: boolean;
  byomComputersAllowedEmails: string[];
}

/** An organization's controls until an admin changes them. */
export const DEFAULT_CONTROLS: Readonly<OrganizationControls> = {
  restrictApiKeyCreationToManagers: false,
  restrictMemberVisibility: false,
  managedComputersEnabled: true,
  managedComputersAllowedEmails: [],
  byomComputersEnabled: true,
  byomComputersAllowedEmails: [],
};

/**
 * Where Auth reads an organization's enterprise controls. The EnterpriseControls module binds
 * its own implementation here; until it does, every organization has the defaults.
 */
export abstract class OrganizationControlsReader {
  abstract read(organizationId: string): Promise<OrganizationControls>;
}

@Injectable()
export class DefaultOrganizationControls extends OrganizationControlsReader {
  read(): Promise<OrganizationControls> {
    return Promise.resolve({ ...DEFAULT_CONTROLS, managedComputersAllowedEmails: [], byomComputersAllowedEmails: [] });
  }
}
