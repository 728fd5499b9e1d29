/**
 * What a webhook looks like in its events: never its secret, and only the origin of its URL (a path
 * or query often carries the receiver's own token, and events reach more readers than the webhook).
 */
export interface WebhookSummary {
  webhookId: string;
  /** `https://host:port` of the URL. */
  origin: string;
  /** Empty: every event type. */
  eventTypes: string[];
  enabled: boolean;
}

/** A webhook was created. */
export type WebhookCreatedData = WebhookSummary;

/** A webhook was changed; `changes` names the fields (`secret` when its secret was rotated). */
export interface WebhookUpdatedData extends WebhookSummary {
  changes: string[];
}

/** A webhook was deleted, with its pending deliveries. */
export type WebhookDeletedData = WebhookSummary;

/**
 * The server disabled a webhook whose deliveries kept failing (WEBHOOK_DISABLE_AFTER_MS without a
 * success). An owner or manager enables it again with PATCH `enabled: true`.
 */
export interface WebhookDisabledData extends WebhookSummary {
  reason: 'endpoint_failing';
  /** Unix ms of the first failed attempt since its last success. */
  failingSince: number;
  /** The last attempt's outcome: a status code, or the network error. */
  lastError: string;
}

declare module '../../../platform/events/event' {
  interface EventDataMap {
    'webhook.created': WebhookCreatedData;
    'webhook.updated': WebhookUpdatedData;
    'webhook.deleted': WebhookDeletedData;
    'webhook.disabled': WebhookDisabledData;
  }
}
