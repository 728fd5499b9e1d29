export { DomainEvent } from './domain-event';
export type { DomainEventMap, DomainEventName } from './domain-event';
export { DomainEventBus } from './domain-event-bus';
export { OnDomainEvent } from './on-domain-event.decorator';
export { EventsModule } from './events.module';
