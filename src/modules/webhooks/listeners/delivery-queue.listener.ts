import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AnyStoredEvent, DurableListeners } from '../../../platform/events';
import { EVENT_TYPES } from '../../events';
import { storedPayload } from '../domain/payload';
import { WebhookDeliveryJob } from '../jobs/webhook-delivery.job';
import { WebhooksRepository } from '../webhooks.repository';

/**
 * Queues deliveries from the event log: a durable listener, so each event is looked at at least once
 * however the server stops, and the delivery rows are written in the transaction that moves its
 * checkpoint (exactly once, and unique per webhook and event besides). Once that transaction has
 * committed, this instance's delivery job is told to send them at once.
 */
@Injectable()
export class DeliveryQueueListener implements OnModuleInit {
  constructor(
    private readonly listeners: DurableListeners,
    private readonly repository: WebhooksRepository,
    private readonly job: WebhookDeliveryJob,
  ) {}

  onModuleInit(): void {
    this.listeners.register({
      name: 'webhooks.deliveries',
      types: EVENT_TYPES,
      handle: (manager, events) => this.queue(manager, events),
      afterCommit: () => this.job.poke(),
    });
  }

  private async queue(manager: EntityManager, events: AnyStoredEvent[]): Promise<void> {
    await this.repository.queueDeliveries(
      manager,
      events[0].organizationId,
      events.map((event) => ({ ...event, payload: storedPayload(event) })),
    );
  }
}
