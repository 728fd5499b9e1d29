import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource, EntityManager, QueryRunner, TransactionCommitEvent } from 'typeorm';
import { AnyStoredEvent, DurableListeners } from '../../../platform/events';
import { EVENT_TYPES } from '../domain/event-types';
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
  private readonly queuedIn = new WeakSet<QueryRunner>();

  constructor(
    private readonly listeners: DurableListeners,
    private readonly repository: WebhooksRepository,
    private readonly job: WebhookDeliveryJob,
    private readonly dataSource: DataSource,
  ) {}

  onModuleInit(): void {
    this.dataSource.subscribers.push({
      afterTransactionCommit: (event: TransactionCommitEvent) => {
        if (this.queuedIn.has(event.queryRunner)) {
          this.queuedIn.delete(event.queryRunner);
          this.job.poke();
        }
      },
    });
    this.listeners.register({ name: 'webhooks.deliveries', types: EVENT_TYPES, handle: (manager, events) => this.queue(manager, events) });
  }

  private async queue(manager: EntityManager, events: AnyStoredEvent[]): Promise<void> {
    const queued = await this.repository.queueDeliveries(manager, events[0].organizationId, events.map((event) => ({ ...event, payload: storedPayload(event) })));
    if (queued > 0 && manager.queryRunner) this.queuedIn.add(manager.queryRunner);
  }
}
