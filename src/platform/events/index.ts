export type { AnyStatementEvent, AnyStoredEvent, EventActor, EventDataMap, EventType, NewEvent, StatementEvent, StoredEvent } from './event';
export { EventLog, EventQuery } from './event-log';
export { LiveEvents, MESSAGE_DELTA_KINDS, MessageDelta, MessageDeltaKind, TOOL_DELTA_KINDS } from './live-events';
export { DurableListener, DurableListeners } from './durable-listeners';
export { OnDomainEvent } from './on-domain-event.decorator';
export { EventsModule } from './events.module';
export { INSTANCE_DRAINING } from './instance-draining';
