import { randomUUID } from 'node:crypto';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { OnDomainEvent } from '../../platform/events';
import { PgListener } from '../../platform/database/pg-listener';
import { MessageAddedEvent, SessionStatusChangedEvent } from './events';
import { MessageRole } from './domain/message';
import { SessionStatus } from './domain/session-status';

/** The PostgreSQL channel on which instances tell each other that work arrived. */
export const WORK_CHANNEL = 'agent_platform_work';

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
 * Wakes agents waiting in a long poll when work arrives in their organization: on this instance
 * through domain events, from other instances through PostgreSQL `NOTIFY` on {@link WORK_CHANNEL}
 * (one dedicated listening connection per instance). PGlite is one process: events suffice.
 *
 * Waiting polls hold no database connection. Against a thundering herd, an arrival wakes only
 * the oldest poll of each queue it may be in (polls of the same queue would all see the same
 * rows); a poll that took work wakes the next of its queue (more may be waiting), and one that
 * was woken but found nothing or went away without looking passes nothing on, or passes on,
 * respectively. So one arrival costs one query per matching queue, not one per waiting poll.
 */
@Injectable()
export class WorkSignal implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WorkSignal.name);
  private readonly organizations = new Map<string, OrganizationPolls>();
  /** Tells this instance's own notifications apart: their waiters were woken directly. */
  private readonly instanceId = randomUUID();
  private listener: PgListener | null = null;
  /** Announcements for the other instances not sent yet, and whether a send is under way. */
  private readonly unsent = new Set<string>();
  private sending = false;
  /** Set when the application starts to shut down: long polls then answer at once. */
  closing = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.engine !== 'postgres') return;
    this.listener = new PgListener(this.dataSource, WORK_CHANNEL, {
      onNotify: (payload) => this.onNotification(payload),
      // Arrivals announced while the listener was down were missed: every poll looks again.
      onResumed: () => this.wakeEveryone('woken'),
    });
    await this.listener.start();
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

  /** Work may have arrived: wakes this instance's polls that could take it, and tells the other instances. */
  announce(arrival: Arrival): void {
    this.arrived(arrival);
    if (!this.listener) return;
    this.unsent.add(JSON.stringify({ i: this.instanceId, o: arrival.organizationId, c: arrival.computerId }));
    if (!this.sending) void this.sendAnnouncements();
  }

  /**
   * One statement at a time carries every announcement made meanwhile (duplicates once): under
   * load a NOTIFY a request would cost one, not one round trip each.
   */
  private async sendAnnouncements(): Promise<void> {
    this.sending = true;
    try {
      while (this.unsent.size > 0 && this.listener) {
        const payloads = [...this.unsent];
        this.unsent.clear();
        await this.listener.notify(payloads).catch((error: Error) => {
          // The other instances' polls find the work at their safety re-check.
          if (!this.closing) this.logger.warn(`Could not announce work to other instances: ${error.message}`);
        });
      }
    } finally {
      this.sending = false;
    }
  }

  @OnDomainEvent('sessions.message.added')
  onMessageAdded(event: MessageAddedEvent): void {
    if (event.role === MessageRole.User) this.announce({ organizationId: event.organizationId, computerId: event.workComputerId });
  }

  @OnDomainEvent('sessions.session.statusChanged')
  onStatusChanged(event: SessionStatusChangedEvent): void {
    if (event.to === SessionStatus.Pending) this.announce({ organizationId: event.organizationId });
  }

  /**
   * Runs before the HTTP server stops accepting and drains requests: waiting long polls answer at
   * once, so shutdown does not wait for their timeouts.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.wakeEveryone('timeout');
    await this.listener?.close();
  }

  private onNotification(payload: string): void {
    let arrival: { i?: unknown; o?: unknown; c?: unknown };
    try {
      arrival = JSON.parse(payload) as typeof arrival;
    } catch {
      return;
    }
    if (arrival.i === this.instanceId || typeof arrival.o !== 'string') return;
    const computerId = typeof arrival.c === 'string' || arrival.c === null ? arrival.c : undefined;
    this.arrived({ organizationId: arrival.o, computerId });
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
