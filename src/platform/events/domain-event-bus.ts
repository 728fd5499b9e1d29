import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { DomainEventMap } from './domain-event';

type AnyDomainEvent = DomainEventMap[keyof DomainEventMap];

/**
 * Publishes domain events to other modules. Call it only after the transaction that made the
 * events true has committed, so a listener never sees (or acts on) work that was rolled back.
 * Listeners run asynchronously: publishing never waits for them or fails because of them.
 */
@Injectable()
export class DomainEventBus {
  constructor(private readonly emitter: EventEmitter2) {}

  publish(...events: AnyDomainEvent[]): void {
    for (const event of events) this.emitter.emit((event as { name: string }).name, event);
  }
}
