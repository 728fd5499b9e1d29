import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { EventLog, INSTANCE_DRAINING, OnDomainEvent, StoredEvent } from '../../platform/events';
import { MessageRole, SessionStatus } from '../sessions';

/** The queue a long poll takes from (see SessionsRepository.lockNextWork). */
export interface WorkScope {
  computerId: string | null;
  ownerId?: string;
}

/** Why a wait ended. */
export type WaitOutcome = 'woken' | 'timeout' | 'abandoned';

/**
 * What arrived: work in an organization's queue of one computer (or the unrouted one, null), or
 * anywhere in it (undefined: a session became pending again, its queue not named).
 */
interface Arrival {
  organizationId: string;
  computerId?: string | null;
}

interface Waiter {
  wake(outcome: WaitOutcome): void;
}

/** The long polls of one organization on this instance, in groups of the same queue. */
class OrganizationPolls {
  /** Counts the arrivals: a poll that saw it change while it looked looks again instead of sleeping. */
  version = 0;
  open = 0;
  /** Per queue, its waiting polls, oldest first. */
  readonly groups = new Map<string, { computerId: string | null; waiters: Set<Waiter> }>();
}

/**
 * Wakes agents waiting in a long poll when work arrives in their organization: a message for them
 * or a session pending again, committed on this instance or another (the event log brings every
 * instance the events of all; see EventLog).
 *
 * Waiting polls hold no database connection. Against a thundering herd, an arrival wakes only
 * the oldest poll of each queue it may be in (polls of the same queue would all see the same
 * rows); a poll that took work wakes the next of its queue (more may be waiting), and one that
 * was woken but found nothing or went away without looking passes nothing on, or passes on,
 * respectively. So one arrival costs one query per matching queue, not one per waiting poll.
 */
@Injectable()
export class WorkSignal implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly organizations = new Map<string, OrganizationPolls>();
  /** Set when the application starts to shut down: long polls then answer at once. */
  closing = false;

  constructor(private readonly events: EventLog) {}

  onApplicationBootstrap(): void {
    // Events committed while another instance's announcements could not reach this one were missed: every poll looks again.
    this.events.growth.on('resumed', () => this.wakeEveryone('woken'));
  }

  /** Opens a long poll of `scope` in the organization; close it when the claim answers. */
  open(organizationId: string, scope: WorkScope): LongPoll {
    let polls = this.organizations.get(organizationId);
    if (!polls) {
      polls = new OrganizationPolls();
      this.organizations.set(organizationId, polls);
    }
    polls.open++;
    return new LongPoll(this, organizationId, polls, `${scope.computerId ?? ''}|${scope.ownerId ?? ''}`, scope.computerId);
  }

  /** @internal a closed poll's organization is forgotten once it has none open. */
  release(organizationId: string, polls: OrganizationPolls): void {
    polls.open--;
    if (polls.open === 0 && this.organizations.get(organizationId) === polls) this.organizations.delete(organizationId);
  }

  @OnDomainEvent('message.added')
  onMessageAdded(event: StoredEvent<'message.added'>): void {
    if (event.data.role === MessageRole.User) this.arrived({ organizationId: event.organizationId, computerId: event.data.computerId });
  }

  @OnDomainEvent('session.status_changed')
  onStatusChanged(event: StoredEvent<'session.status_changed'>): void {
    if (event.data.to === SessionStatus.Pending) this.arrived({ organizationId: event.organizationId });
  }

  /**
   * When the instance begins to stop (and at the latest before the HTTP server stops accepting): waiting long polls
   * answer at once, and new ones do not wait, so agents poll again through the load balancer, and shutdown does not
   * wait for their timeouts.
   */
  @OnEvent(INSTANCE_DRAINING)
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.wakeEveryone('timeout');
  }

  private arrived({ organizationId, computerId }: Arrival): void {
    const polls = this.organizations.get(organizationId);
    if (!polls) return;
    polls.version++;
    for (const group of polls.groups.values()) {
      if (computerId === undefined || group.computerId === computerId) wakeFirst(group.waiters, 'woken');
    }
  }

  private wakeEveryone(outcome: WaitOutcome): void {
    for (const polls of this.organizations.values()) {
      polls.version++;
      for (const group of polls.groups.values()) for (const waiter of [...group.waiters]) waiter.wake(outcome);
    }
  }
}

function wakeFirst(waiters: Set<Waiter>, outcome: WaitOutcome): void {
  const [first] = waiters;
  first?.wake(outcome);
}

/**
 * One claim's long poll: between looks at the database it waits, holding nothing but a timer,
 * until work may have arrived, `ms` pass, or its client goes away.
 */
export class LongPoll {
  /** Woken for an arrival and not yet looked: must look, or pass the turn on. */
  private owed = false;
  private closed = false;

  constructor(
    private readonly signal: WorkSignal,
    private readonly organizationId: string,
    private readonly polls: OrganizationPolls,
    private readonly key: string,
    private readonly computerId: string | null,
  ) {}

  /** Call right before looking for work; pass the result to `wait` if none was found. */
  mark(): number {
    this.owed = false;
    return this.polls.version;
  }

  /** After a look that took work: the next poll of the queue looks too, as more may be waiting. */
  tookWork(): void {
    this.passOn();
  }

  /** Waits up to `ms`; at once when an arrival came since `seen` (a look may have missed it). */
  wait(ms: number, seen: number, abandoned?: AbortSignal): Promise<WaitOutcome> {
    if (abandoned?.aborted) return Promise.resolve('abandoned');
    if (this.signal.closing) return Promise.resolve('timeout');
    if (this.polls.version !== seen) return Promise.resolve('woken');
    const group = this.group();
    return new Promise((resolve) => {
      const waiter: Waiter = {
        wake: (outcome) => {
          if (!group.waiters.delete(waiter)) return;
          clearTimeout(timer);
          abandoned?.removeEventListener('abort', onAbort);
          if (group.waiters.size === 0 && this.polls.groups.get(this.key) === group) this.polls.groups.delete(this.key);
          if (outcome === 'woken') this.owed = true;
          resolve(outcome);
        },
      };
      const onAbort = () => waiter.wake('abandoned');
      const timer = setTimeout(() => waiter.wake('timeout'), ms);
      abandoned?.addEventListener('abort', onAbort, { once: true });
      group.waiters.add(waiter);
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    // Woken for work it will never look at (its client went away): the next poll looks instead.
    if (this.owed) this.passOn();
    this.signal.release(this.organizationId, this.polls);
  }

  private passOn(): void {
    this.owed = false;
    const group = this.polls.groups.get(this.key);
    if (group) wakeFirst(group.waiters, 'woken');
  }

  private group() {
    let group = this.polls.groups.get(this.key);
    if (!group) {
      group = { computerId: this.computerId, waiters: new Set() };
      this.polls.groups.set(this.key, group);
    }
    return group;
  }
}
