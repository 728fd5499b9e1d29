import { Logger } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { DomainEventMap, DomainEventName } from './domain-event';

const logger = new Logger('DomainEvents');

/**
 * Marks a method as the listener of one domain event. The listener runs asynchronously; an
 * error it throws is logged with the event's name and ids rather than swallowed silently or
 * left to crash the process as an unhandled rejection.
 */
export function OnDomainEvent<Name extends DomainEventName>(name: Name) {
  // Generic in the method's own type, so listeners returning void or a promise both fit.
  return <Listener extends (event: DomainEventMap[Name]) => unknown>(
    target: object,
    method: string | symbol,
    descriptor: TypedPropertyDescriptor<Listener>,
  ): void => {
    const listener = descriptor.value!;
    const where = `${target.constructor.name}.${String(method)}`;
    const guarded = async function (this: unknown, event: DomainEventMap[Name]) {
      try {
        await listener.call(this, event);
      } catch (error) {
        logger.error({ err: error, event: name, listener: where, payload: event }, 'A domain event listener failed');
      }
    };
    descriptor.value = guarded as unknown as Listener;
    OnEvent(name, { async: true, promisify: true, suppressErrors: false })(target, method, descriptor);
  };
}
