import { ControlRevisionEntity } from '../entities';
import { EnterpriseSettings } from './settings';
import { PatchOperation } from './settings-diff';

export interface ChangeUserView {
  id: string;
  email: string;
  name: string;
}

/** The spec's Enterprise control change. */
export interface ControlChangeView {
  revision: number;
  settings: EnterpriseSettings;
  user: ChangeUserView;
  updatedAt: string;
}

/** One revision read alone: the change and what it changed. */
export interface ControlRevisionView extends ControlChangeView {
  diff: PatchOperation[];
}

/** The controls in force: the latest revision, or revision 0 (the defaults) before any change. */
export interface ControlsView {
  revision: number;
  settings: EnterpriseSettings;
  user: ChangeUserView | null;
  updatedAt: string | null;
}

/** `settings` must already be masked. */
export function toChangeView(row: ControlRevisionEntity, settings: EnterpriseSettings): ControlChangeView {
  return {
    revision: row.revision,
    settings,
    user: { id: row.userId, email: row.userEmail, name: row.userName },
    updatedAt: row.createdAt.toISOString(),
  };
}
