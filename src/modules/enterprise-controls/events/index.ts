import { SettingsRevisedEvent } from './settings-revised.event';

declare module '../../../platform/events/domain-event' {
  interface DomainEventMap {
    'enterpriseControls.settings.revised': SettingsRevisedEvent;
  }
}

export { SettingsRevisedEvent };
