import { OnDomainEvent } from './on-domain-event.decorator';

describe('OnDomainEvent', () => {
  it('refuses a second one on the same method, which Nest would silently never register', () => {
    const defineStacked = () => {
      class Listener {
        @OnDomainEvent('computer.deleted')
        @OnDomainEvent('computer.status_changed')
        onEither(): void {}
      }
      return Listener;
    };
    expect(defineStacked).toThrow('Listener.onEither has two @OnDomainEvent: give each event type a method of its own.');
  });

  it('takes one per method, on as many methods as a class has', () => {
    class Listeners {
      @OnDomainEvent('computer.deleted')
      onDeleted(): void {}
      @OnDomainEvent('computer.status_changed')
      onStatusChanged(): void {}
    }
    // What Nest's EventSubscribersLoader reads to register a listener (@nestjs/event-emitter's EVENT_LISTENER_METADATA).
    const registered = (method: keyof Listeners) =>
      (Reflect.getMetadata('EVENT_LISTENER_METADATA', Listeners.prototype[method]) as Array<{ event: string }>).map((entry) => entry.event);
    expect(registered('onDeleted')).toEqual(['computer.deleted']);
    expect(registered('onStatusChanged')).toEqual(['computer.status_changed']);
  });
});
