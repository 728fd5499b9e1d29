import type { EventType } from '../../../platform/events';
import '../events';

/**
 * Every public event type, with a line on what it says. A record over `EventType`, so a type a module
 * declares and this list lacks fails the build: webhooks can subscribe to exactly the types that exist.
 */
const EVENT_TYPE_DESCRIPTIONS: Record<EventType, string> = {
  'session.created': 'A session was created.',
  'session.status_changed': 'A session moved from one status to another (`from`, `to`).',
  'message.added': 'A message was stored in a session (ids and role).',
  'turn.usage_reported': 'An agent reported the tokens a model used in a turn.',
  'computer.created': 'A computer was created.',
  'computer.status_changed': 'A computer changed status (with the provisioning step).',
  'controls.revised': 'The enterprise controls were revised.',
  'readiness.report_created': 'A readiness report was uploaded.',
  'api_key.created': 'An API key was created (never the key itself).',
  'api_key.revoked': 'An API key was revoked.',
  'member.changed': 'A member was added, changed or removed.',
  'webhook.created': 'A webhook was created.',
  'webhook.updated': 'A webhook was changed, or its secret rotated.',
  'webhook.deleted': 'A webhook was deleted.',
  'webhook.disabled': 'The server disabled a webhook whose deliveries kept failing.',
};

export const EVENT_TYPES = Object.keys(EVENT_TYPE_DESCRIPTIONS).sort() as EventType[];

export function isEventType(value: string): value is EventType {
  return Object.prototype.hasOwnProperty.call(EVENT_TYPE_DESCRIPTIONS, value);
}

/** A Markdown table of the types, for the OpenAPI descriptions and the guide. */
export function eventTypesTable(): string {
  return '| type | meaning |\n|---|---|\n' + EVENT_TYPES.map((type) => `| \`${type}\` | ${EVENT_TYPE_DESCRIPTIONS[type]} |`).join('\n');
}
