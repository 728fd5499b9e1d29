import type { EventType } from '../../../platform/events';
import { EVENT_CATALOGUE, EVENT_TYPES as CATALOGUE_TYPES } from '../../events';

/** Every public event type (the Events module's catalogue): webhooks subscribe to exactly the types that exist. */
export const EVENT_TYPES: EventType[] = [...CATALOGUE_TYPES].sort();

export function isEventType(value: string): value is EventType {
  return Object.prototype.hasOwnProperty.call(EVENT_CATALOGUE, value);
}

/** The catalogue as a Markdown table, for the create route's description. */
export function eventTypesTable(): string {
  return '| type | meaning |\n|---|---|\n' + EVENT_TYPES.map((type) => `| \`${type}\` | ${EVENT_CATALOGUE[type].summary} |`).join('\n');
}
