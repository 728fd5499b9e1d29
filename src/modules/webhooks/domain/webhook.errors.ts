import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum WebhookErrorCode {
  WebhookNotFound = 'webhook_not_found',
  DeliveryNotFound = 'webhook_delivery_not_found',
  /** The URL breaks the address rules (scheme, credentials, a non-public address, this server). */
  UrlRefused = 'webhook_url_refused',
  /** Redelivery to a disabled webhook: it sends nothing until enabled again. */
  WebhookDisabled = 'webhook_disabled',
  TooManyWebhooks = 'too_many_webhooks',
}

export class WebhookError extends DomainError<WebhookErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case WebhookErrorCode.WebhookNotFound:
      case WebhookErrorCode.DeliveryNotFound:
        return ErrorKind.NotFound;
      case WebhookErrorCode.UrlRefused:
        return ErrorKind.InvalidRequest;
      case WebhookErrorCode.WebhookDisabled:
      case WebhookErrorCode.TooManyWebhooks:
        return ErrorKind.Conflict;
    }
  }
}

export function webhookNotFound(webhookId: string): WebhookError {
  return new WebhookError(WebhookErrorCode.WebhookNotFound, `No webhook ${webhookId} exists in your organization.`);
}

export function deliveryNotFound(webhookId: string, deliveryId: string): WebhookError {
  return new WebhookError(WebhookErrorCode.DeliveryNotFound, `No delivery ${deliveryId} of webhook ${webhookId} exists.`);
}
