export { EventsApiModule } from './events.module';
export { EventPresenter } from './event-presenter';
export type { PublicEvent, PublicActor, PresentOptions } from './event-presenter';
export { EventVisibility } from './event-visibility';
export type { EventViewer } from './event-visibility';
export { EVENT_CATALOGUE, EVENT_TYPES, eventSchemas, eventTypesTable, isEventType } from './schemas/event.schemas';
