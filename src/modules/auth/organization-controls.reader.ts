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

export type ControlsSource = (organizationId: string) => Promise<OrganizationControls>;

/**
 * Where Auth, Sessions and Computers read an organization's enterprise controls. The
 * EnterpriseControls module imports Auth, so it binds its reader here at start-up; unbound (as in
 * the CLI), every organization has the defaults.
 */
@Injectable()
export class OrganizationControlsReader {
  private source: ControlsSource = () => Promise.resolve({ ...DEFAULT_CONTROLS, managedComputersAllowedEmails: [], byomComputersAllowedEmails: [] });

  bind(source: ControlsSource): void {
    this.source = source;
  }

  read(organizationId: string): Promise<OrganizationControls> {
    return this.source(organizationId);
  }
}
