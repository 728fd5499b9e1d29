import { codesOf, CodeOf, errorClassOf, ErrorKind, ErrorTable } from '../../../platform/http/domain-error';

const WEBHOOK_ERRORS = {
  WebhookNotFound: { code: 'webhook_not_found', kind: ErrorKind.NotFound },
  DeliveryNotFound: { code: 'webhook_delivery_not_found', kind: ErrorKind.NotFound },
  /** The URL breaks the address rules (scheme, credentials, a non-public address, this server). */
  UrlRefused: { code: 'webhook_url_refused', kind: ErrorKind.InvalidRequest },
  /** Redelivery to a disabled webhook: it sends nothing until enabled again. */
  WebhookDisabled: { code: 'webhook_disabled', kind: ErrorKind.Conflict },
  TooManyWebhooks: { code: 'too_many_webhooks', kind: ErrorKind.Conflict },
} as const satisfies ErrorTable;

export const WebhookErrorCode = codesOf(WEBHOOK_ERRORS);
export type WebhookErrorCode = CodeOf<typeof WEBHOOK_ERRORS>;

export class WebhookError extends errorClassOf(WEBHOOK_ERRORS) {}

export function webhookNotFound(webhookId: string): WebhookError {
  return new WebhookError(WebhookErrorCode.WebhookNotFound, `No webhook ${webhookId} exists in your organization.`);
}

/** A webhook more than an organization may have. */
export function tooManyWebhooks(limit: number): WebhookError {
  return new WebhookError(WebhookErrorCode.TooManyWebhooks, `An organization may have at most ${limit} webhooks; delete one first.`, { limit });
}

/** Redelivery to a disabled webhook. */
export function webhookDisabled(webhookId: string): WebhookError {
  return new WebhookError(WebhookErrorCode.WebhookDisabled, `Webhook ${webhookId} is disabled; enable it (PATCH enabled: true) before redelivering.`);
}

export function deliveryNotFound(webhookId: string, deliveryId: string): WebhookError {
  return new WebhookError(WebhookErrorCode.DeliveryNotFound, `No delivery ${deliveryId} of webhook ${webhookId} exists.`);
}
