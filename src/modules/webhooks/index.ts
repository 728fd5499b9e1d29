export { WebhooksModule } from './webhooks.module';
export { WebhooksService } from './webhooks.service';
export * from './events';
