import { Module } from '@nestjs/common';
import { SecretBox } from '../../platform/secrets/secret-box';
import { AuthModule } from '../auth';
import { EventsApiModule } from '../events';
import { WebhookAttempts } from './delivery/webhook-attempts';
import { WebhookSender } from './delivery/webhook-sender';
import { WebhookDeliveryJob } from './jobs/webhook-delivery.job';
import { DeliveryQueueListener } from './listeners/delivery-queue.listener';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/** Webhooks: events of the log sent, signed, to the organization's receivers, at least once. */
@Module({
  imports: [AuthModule, EventsApiModule],
  controllers: [WebhooksController],
  providers: [WebhooksRepository, WebhooksService, WebhookSender, WebhookAttempts, WebhookDeliveryJob, DeliveryQueueListener, SecretBox],
  exports: [WebhooksService],
})
export class WebhooksModule {}
