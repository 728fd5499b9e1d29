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
 * Where Auth, Sessions and Computers read an organization's enterprise controls: a contract the
 * EnterpriseControls module fulfils (it imports Auth, so Auth cannot import it). Resolved when the
 * application starts: an application without a provider fails to start (the CLI provides the defaults).
 */
export abstract class OrganizationControlsReader {
  abstract read(organizationId: string): Promise<OrganizationControls>;
}

/** Every organization has the defaults: for programs without the EnterpriseControls module (the CLI). */
export class DefaultControlsReader extends OrganizationControlsReader {
  read(): Promise<OrganizationControls> {
    return Promise.resolve({ ...DEFAULT_CONTROLS, managedComputersAllowedEmails: [], byomComputersAllowedEmails: [] });
  }
}
