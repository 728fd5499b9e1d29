import type { ApiSchema } from '../../../platform/http/api-schema';
import { closedObject, SchemaObject, SchemaRegistry } from '../../../platform/http/json-schema';
import { pageQuery } from '../../../platform/http/pagination';
import { EVENT_TYPES } from '../../events';
import { DELIVERY_STATUSES, WEBHOOK_VIEWS } from './webhook-views';

const URL_RULES =
  'An `https` URL (`http` only for a host the operator lists in `WEBHOOK_ALLOWED_HOSTS`), without credentials or fragment. ' +
  'An IP address that is not public (loopback, private, link-local, cloud metadata, in any spelling) or this server is refused here (400 `webhook_url_refused`); ' +
  'a host name is resolved at each delivery, and an attempt to a name resolving to such an address is refused and logged in the delivery log.';

const url = (extra: SchemaObject = {}): SchemaObject => ({ type: 'string', maxLength: 2048, description: URL_RULES, ...extra });
const eventTypes = (description: string): SchemaObject => ({
  type: 'array',
  maxItems: EVENT_TYPES.length,
  items: { type: 'string', enum: [...EVENT_TYPES], 'x-problem': 'must be a known event type (see GET /api/v0/organization/webhooks docs)' },
  description,
});
const description: SchemaObject = { type: 'string', nullable: true, maxLength: 500 };

/** The webhooks' request bodies, query strings (validated by Ajv) and answers, published as they are. */
export const webhookSchemas = new SchemaRegistry('webhooks').add({
  ...WEBHOOK_VIEWS,
  CreateWebhookBody: closedObject(['url'], {
    url: url({ example: 'https://hooks.example.com/agent-platform' }),
    eventTypes: eventTypes('The event types to send. Omitted or empty: every type, including types added later.'),
    enabled: { type: 'boolean', default: true, description: 'A disabled webhook is sent nothing, and events meanwhile are not queued for it.' },
    description,
  }),
  UpdateWebhookBody: closedObject([], {
    url: url(),
    eventTypes: eventTypes('Empty: every type.'),
    enabled: { type: 'boolean', description: '`true` also clears a disabling by the server (`disabledReason`) and its record of failures.' },
    description,
  }),
  ListWebhooksQuery: pageQuery(),
  ListDeliveriesQuery: pageQuery({ status: { type: 'string', enum: [...DELIVERY_STATUSES], description: 'Only deliveries in this state.' } }),
});

export type CreateWebhookInput = ApiSchema<'CreateWebhookBody'>;
export type UpdateWebhookInput = ApiSchema<'UpdateWebhookBody'>;
export type ListDeliveriesQuery = ApiSchema<'ListDeliveriesQuery'>;
