import type { AnyStoredEvent } from '../../../platform/events';

/**
 * The event as the log holds it, kept with each delivery: a redelivery needs no log entry (retention
 * may have dropped it). It is presented (as streams show it) when sent.
 */
export function storedPayload(event: AnyStoredEvent): string {
  return JSON.stringify(event);
}

export function parseStoredPayload(payload: string): AnyStoredEvent {
  const event = JSON.parse(payload) as AnyStoredEvent & { occurredAt: string };
  return { ...event, occurredAt: new Date(event.occurredAt) } as AnyStoredEvent;
}
