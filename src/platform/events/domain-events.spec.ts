import { Injectable, Logger } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Test } from '@nestjs/testing';
import { DomainEvent } from './domain-event';
import { DomainEventBus } from './domain-event-bus';
import { EventsModule } from './events.module';
import { OnDomainEvent } from './on-domain-event.decorator';

class ThingHappenedEvent extends DomainEvent<'test.thing.happened'> {
  readonly name = 'test.thing.happened' as const;

  constructor(readonly thingId: string) {
    super('org-1', new Date());
  }
}

declare module './domain-event' {
  interface DomainEventMap {
    'test.thing.happened': ThingHappenedEvent;
  }
}

@Injectable()
class Listeners {
  readonly seen: string[] = [];

  @OnDomainEvent('test.thing.happened')
  record(event: ThingHappenedEvent): void {
    this.seen.push(event.thingId);
  }

  @OnDomainEvent('test.thing.happened')
  fail(_event: ThingHappenedEvent): Promise<void> {
    return Promise.reject(new Error('listener broke'));
  }
}

describe('domain events', () => {
  it('deliver to every listener, and a failing listener is logged without stopping the others', async () => {
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const module = await Test.createTestingModule({ imports: [EventsModule], providers: [Listeners] }).compile();
    await module.init();
    try {
      module.get(DomainEventBus).publish(new ThingHappenedEvent('t-1'));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(module.get(Listeners).seen).toEqual(['t-1']);
      expect(errors).toHaveBeenCalledWith(
        expect.objectContaining({ event: 'test.thing.happened', listener: 'Listeners.fail', err: expect.objectContaining({ message: 'listener broke' }) }),
        'A domain event listener failed',
      );
      expect(module.get(EventEmitter2).listenerCount('test.thing.happened')).toBe(2);
    } finally {
      errors.mockRestore();
      await module.close();
    }
  });
});
