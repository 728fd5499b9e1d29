import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { EventLog, INSTANCE_DRAINING, OnDomainEvent, StoredEvent } from '../../platform/events';
import { LongPoll, WaitRoom } from '../../platform/long-poll';
import { MessageRole, SessionStatus } from '../sessions';

/** The queue a long poll takes from (see SessionsRepository.lockNextWork). */
export interface WorkScope {
  computerId: string | null;
  ownerId?: string;
}

export type { WaitOutcome } from '../../platform/long-poll';

/** Polls of the same queue (computer and owner) would all see the same rows: one group of the wait room. */
function queueKey(scope: WorkScope): string {
  return `${scope.computerId ?? ''}|${scope.ownerId ?? ''}`;
}

/**
 * Wakes agents waiting in a long poll when work arrives in their organization: a message for them
 * or a session pending again, committed on this instance or another (the event log brings every
 * instance the events of all; see EventLog).
 *
 * The polls wait in a WaitRoom (src/platform/long-poll), one group per queue: an arrival wakes only
 * the oldest poll of each queue it may be in, so one arrival costs one query per matching queue,
 * not one per waiting poll. A message routed to a computer is in that computer's queues; a session
 * pending again may be in any of the organization's.
 */
@Injectable()
export class WorkSignal implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly room = new WaitRoom<WorkScope>();

  constructor(private readonly events: EventLog) {}

  /** Set when the application starts to shut down: long polls then answer at once. */
  get closing(): boolean {
    return this.room.closing;
  }

  onApplicationBootstrap(): void {
    // Events committed while another instance's announcements could not reach this one were missed: every poll looks again.
    this.events.growth.on('resumed', () => this.room.wakeEveryone('woken'));
  }

  /** Opens a long poll of `scope` in the organization; close it when the claim answers. */
  open(organizationId: string, scope: WorkScope): LongPoll<WorkScope> {
    return this.room.open(organizationId, queueKey(scope), { computerId: scope.computerId, ownerId: scope.ownerId });
  }

  @OnDomainEvent('message.added')
  onMessageAdded(event: StoredEvent<'message.added'>): void {
    if (event.data.role === MessageRole.User) this.arrived(event.organizationId, event.data.computerId);
  }

  @OnDomainEvent('session.status_changed')
  onStatusChanged(event: StoredEvent<'session.status_changed'>): void {
    if (event.data.to === SessionStatus.Pending) this.arrived(event.organizationId);
  }

  /**
   * When the instance begins to stop (and at the latest before the HTTP server stops accepting): waiting long polls
   * answer at once, and new ones do not wait, so agents poll again through the load balancer, and shutdown does not
   * wait for their timeouts.
   */
  @OnEvent(INSTANCE_DRAINING)
  async beforeApplicationShutdown(): Promise<void> {
    this.room.shutDown();
  }

  /**
   * Work arrived in an organization's queue of one computer (or the unrouted one, null), or anywhere in it (undefined:
   * a session became pending again, its queue not named).
   */
  private arrived(organizationId: string, computerId?: string | null): void {
    this.room.arrived(organizationId, computerId === undefined ? undefined : (queue) => queue.computerId === computerId);
  }
}
