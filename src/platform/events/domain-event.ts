/**
 * The one typed map from event name to event class. Each module adds its events by declaration
 * merging in its own `events/` folder, so emit and listen are checked by the compiler:
 *
 *   declare module '../../../platform/events/domain-event' {
 *     interface DomainEventMap { 'sessions.message.added': MessageAddedEvent }
 *   }
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface DomainEventMap {}

export type DomainEventName = keyof DomainEventMap;

/** Payloads carry ids, the organization, the time and a small snapshot: never ORM entities. */
export abstract class DomainEvent<Name extends string = string> {
  abstract readonly name: Name;

  protected constructor(
    readonly organizationId: string,
    readonly occurredAt: Date,
  ) {}
}
