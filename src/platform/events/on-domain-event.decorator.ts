import { Logger } from '@nestjs/common';
import { isDatabaseUnavailable } from '../database/database-unavailable';
import { OnEvent } from '@nestjs/event-emitter';
import { EventType, StoredEvent } from './event';

const logger = new Logger('DomainEvents');

/** Methods already made listeners: a second decorator would wrap the first, and Nest would see only the outer one. */
const listeners = new WeakSet<object>();

/**
 * Marks a method as this instance's listener of one event type, for effects that may be lost
 * with the process (waking long polls, dropping a cache): it gets every event of the type committed
 * on any instance, after the commit. Effects that must not be lost are durable listeners instead.
 * An error it throws is logged with the event's type and ids, never left to crash the process.
 * One per method: stacked, only the outer one would be registered (the inner's metadata is on the function it
 * replaced), so a second one throws when the class is defined.
 */
export function OnDomainEvent<T extends EventType>(type: T) {
  // Generic in the method's own type, so listeners returning void or a promise both fit.
  return <Listener extends (event: StoredEvent<T>) => unknown>(
    target: object,
    method: string | symbol,
    descriptor: TypedPropertyDescriptor<Listener>,
  ): void => {
    const listener = descriptor.value!;
    const where = `${target.constructor.name}.${String(method)}`;
    if (listeners.has(listener)) throw new Error(`${where} has two @OnDomainEvent: give each event type a method of its own.`);
    const guarded = async function (this: unknown, event: StoredEvent<T>) {
      try {
        await listener.call(this, event);
      } catch (error) {
        const line = { event: type, eventId: event.id, organizationId: event.organizationId, listener: where };
        if (isDatabaseUnavailable(error)) logger.warn(line, `A domain event listener could not reach the database: ${(error as Error).message}`);
        else logger.error({ err: error, ...line }, 'A domain event listener failed');
      }
    };
    listeners.add(guarded);
    descriptor.value = guarded as unknown as Listener;
    OnEvent(type, { async: true, promisify: true, suppressErrors: false })(target, method, descriptor);
  };
}
