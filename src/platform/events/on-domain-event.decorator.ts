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
  return (
    target: object,
    method: string | symbol,
    descriptor: TypedPropertyDescriptor<(event: DomainEventMap[Name]) => unknown>,
  ): void => {
    const listener = descriptor.value!;
    const where = `${target.constructor.name}.${String(method)}`;
    descriptor.value = async function (this: unknown, event: DomainEventMap[Name]) {
      try {
        await listener.call(this, event);
      } catch (error) {
        logger.error({ err: error, event: name, listener: where, payload: event }, 'A domain event listener failed');
      }
    };
    OnEvent(name, { async: true, promisify: true, suppressErrors: false })(target, method, descriptor);
  };
}
