import type { ApiSchema } from '../../../platform/http/api-schema';
import { ControlRevisionEntity } from '../entities';
import { EnterpriseSettings } from './settings';

export type ChangeUserView = ApiSchema<'EnterpriseControlUser'>;

/** The spec's Enterprise control change. */
export type ControlChangeView = ApiSchema<'EnterpriseControlChange'>;

/** One revision read alone: the change and what it changed. */
export type ControlRevisionView = ApiSchema<'EnterpriseControlRevision'>;

/** The controls in force: the latest revision, or revision 0 (the defaults) before any change. */
export type ControlsView = ApiSchema<'EnterpriseControls'>;

/** `settings` must already be masked. */
export function toChangeView(row: ControlRevisionEntity, settings: EnterpriseSettings): ControlChangeView {
  return {
    revision: row.revision,
    settings,
    user: { id: row.userId, email: row.userEmail, name: row.userName },
    updatedAt: row.createdAt.toISOString(),
  };
}
