import type { ApiSchema } from '../../../platform/http/api-schema';
import { answerObject, ref, SchemaObject, unixMs, uuidString } from '../../../platform/http/json-schema';
import { pageOf } from '../../../platform/http/pagination';
import { EVENT_TYPES } from '../../events';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

const webhook = {
  id: uuidString(),
  url: { type: 'string' },
  description: { type: 'string', nullable: true },
  eventTypes: { type: 'array', items: { type: 'string', enum: [...EVENT_TYPES] }, description: 'Empty: every type.' },
  enabled: { type: 'boolean' },
  disabledReason: {
    type: 'string',
    nullable: true,
    enum: ['endpoint_failing', null],
    description: '`endpoint_failing`: the server disabled it after its deliveries failed for `WEBHOOK_DISABLE_AFTER_MS` (a `webhook.disabled` event said so).',
  },
  secretHint: {
    type: 'string',
    example: 'whsec_…Qk8=',
    description: 'The signing secret, masked: only its last four characters. The secret itself is shown once, on create and rotate.',
  },
  failingSince: unixMs('Unix ms of the first failed attempt since the last success; null while healthy.', true),
  createdAt: unixMs(),
  updatedAt: unixMs(),
};

/** What the webhooks' routes answer. */
export const WEBHOOK_VIEWS: Record<string, SchemaObject> = {
  WebhookView: answerObject(webhook),
  WebhookWithSecretView: answerObject({
    ...webhook,
    secret: {
      type: 'string',
      example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      description: 'The signing secret (Standard Webhooks: `whsec_` and base64 of 32 bytes). Shown in this answer only: keep it now.',
    },
  }),
  WebhookListView: pageOf('webhooks', 'WebhookView'),
  AttemptView: answerObject({
    at: unixMs('Unix ms when it started.'),
    statusCode: { type: 'number', nullable: true, description: "The receiver's status code; null when none came (refused, unreachable, timed out)." },
    durationMs: { type: 'number', description: 'How long it took, in ms.' },
    error: {
      type: 'string',
      nullable: true,
      description: 'Why it failed (`answered 500`, `did not answer within ...`, `refused: ...`); null when delivered.',
    },
  }),
  DeliveryView: answerObject({
    id: uuidString(),
    webhookId: uuidString(),
    eventId: uuidString("The event's id, sent as `webhook-id`: the same on every attempt, for de-duplication."),
    eventSeq: { type: 'number', description: "The event's number in the organization's log." },
    eventType: { type: 'string', enum: [...EVENT_TYPES] },
    status: {
      type: 'string',
      enum: [...DELIVERY_STATUSES],
      description: '`pending` (to be tried, or being tried), `delivered` (a 2xx answer), `failed` (every retry failed).',
    },
    attempts: { type: 'array', items: ref('AttemptView'), description: 'Every attempt, oldest first (the last 50).' },
    nextAttemptAt: unixMs('Unix ms of the next attempt while pending; null once delivered or failed.', true),
    createdAt: unixMs(),
    deliveredAt: unixMs('Unix ms.', true),
  }),
  DeliveryListView: pageOf('deliveries', 'DeliveryView'),
};

export type WebhookView = ApiSchema<'WebhookView'>;

export type WebhookWithSecretView = ApiSchema<'WebhookWithSecretView'>;

export type WebhookListView = ApiSchema<'WebhookListView'>;

export type AttemptView = ApiSchema<'AttemptView'>;

export type DeliveryView = ApiSchema<'DeliveryView'>;

export type DeliveryListView = ApiSchema<'DeliveryListView'>;
