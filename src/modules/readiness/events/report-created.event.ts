import { DomainEvent } from '../../../platform/events';

/** A readiness report was stored, for analytics and notifications. */
export class ReadinessReportCreatedEvent extends DomainEvent<'readiness.report.created'> {
  static readonly eventName = 'readiness.report.created';
  readonly name = ReadinessReportCreatedEvent.eventName;

  constructor(
    organizationId: string,
    occurredAt: Date,
    readonly reportId: string,
    readonly repoId: string,
    readonly level: number,
    readonly uploadedBy: string,
  ) {
    super(organizationId, occurredAt);
  }
}
