import { DomainEvent } from '../../../platform/events';

/** An admin changed the organization's enterprise controls: revision `revision` is now in force. */
export class SettingsRevisedEvent extends DomainEvent<'enterpriseControls.settings.revised'> {
  static readonly eventName = 'enterpriseControls.settings.revised';
  readonly name = SettingsRevisedEvent.eventName;

  constructor(
    organizationId: string,
    occurredAt: Date,
    readonly revision: number,
    readonly userId: string,
    /** The top-level settings the revision changed. */
    readonly changedSettings: readonly string[],
  ) {
    super(organizationId, occurredAt);
  }
}
