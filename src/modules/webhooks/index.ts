export { WebhooksModule } from './webhooks.module';
export { WebhooksService } from './webhooks.service';
export { EVENT_TYPES } from './domain/event-types';
export * from './events';
