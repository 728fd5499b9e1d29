import { ReadinessReportCreatedEvent } from './report-created.event';

declare module '../../../platform/events/domain-event' {
  interface DomainEventMap {
    'readiness.report.created': ReadinessReportCreatedEvent;
  }
}

export { ReadinessReportCreatedEvent };
