import { Injectable } from '@nestjs/common';
import { StoredSessionSettings } from '../domain/session-settings';

/**
 * The organization's default session settings, applied under a new session's own. The
 * EnterpriseControls module binds its implementation; until then there are none.
 */
export abstract class SessionDefaults {
  abstract read(organizationId: string): Promise<StoredSessionSettings>;
}

@Injectable()
export class NoSessionDefaults extends SessionDefaults {
  read(): Promise<StoredSessionSettings> {
    return Promise.resolve({});
  }
}
