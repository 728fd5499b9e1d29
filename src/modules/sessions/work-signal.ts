import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { OnDomainEvent } from '../../platform/events';
import { MessageAddedEvent, SessionStatusChangedEvent } from './events';
import { MessageRole } from './domain/message';
import { SessionStatus } from './domain/session-status';

/**
 * Wakes agents waiting in a long poll when work arrives in their organization on this instance.
 * Work arriving through another instance is found by the waiters' periodic re-check.
 */
@Injectable()
export class WorkSignal implements BeforeApplicationShutdown {
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Set when the application starts to shut down: long polls then answer at once. */
  closing = false;

  /** Resolves when work may have arrived for the organization, or after `ms`. */
  wait(organizationId: string, ms: number): Promise<void> {
    if (this.closing) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.waiters.get(organizationId) ?? new Set<() => void>();
      this.waiters.set(organizationId, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.waiters.delete(organizationId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  }

  notify(organizationId: string): void {
    for (const wake of [...(this.waiters.get(organizationId) ?? [])]) wake();
  }

  @OnDomainEvent('sessions.message.added')
  onMessageAdded(event: MessageAddedEvent): void {
    if (event.role === MessageRole.User) this.notify(event.organizationId);
  }

  @OnDomainEvent('sessions.session.statusChanged')
  onStatusChanged(event: SessionStatusChangedEvent): void {
    if (event.to === SessionStatus.Pending) this.notify(event.organizationId);
  }

  /**
   * Runs before the HTTP server stops accepting and drains requests: waiting long polls answer at
   * once, so shutdown does not wait for their timeouts.
   */
  beforeApplicationShutdown(): void {
    this.closing = true;
    for (const organizationId of [...this.waiters.keys()]) this.notify(organizationId);
  }
}
