/** Why a wait ended. */
export type WaitOutcome = 'woken' | 'timeout' | 'abandoned';

/** Which queues an arrival may be in: those whose `data` (or key) it matches. */
export type ArrivalMatch<T> = (data: T, key: string) => boolean;

interface Waiter {
  wake(outcome: WaitOutcome): void;
}

/** The waiting polls of one queue, oldest first, and what the queue is (for matching arrivals). */
interface Group<T> {
  data: T;
  waiters: Set<Waiter>;
}

/** The long polls of one organization on this instance, in groups of the same queue. */
class OrganizationPolls<T> {
  /** Counts the arrivals: a poll that saw it change while it looked looks again instead of sleeping. */
  version = 0;
  open = 0;
  /** Per queue (its key), its waiting polls, oldest first. */
  readonly groups = new Map<string, Group<T>>();
}

const everyQueue = () => true;

/**
 * Where long polls wait for work, per organization and per queue (a key: polls of the same key would all see the same
 * rows), on this instance. It knows nothing of what the work is: its owner says when some arrived (`arrived`), in
 * which of the organization's queues (a match on what each queue was opened with), and each poll looks for it itself.
 *
 * Waiting polls hold nothing but a timer. Against a thundering herd, an arrival wakes only the oldest poll of each
 * queue it may be in; a poll that took work wakes the next of its queue (more may be waiting), and one that was woken
 * but found nothing passes nothing on, while one that went away without looking passes its turn on. So one arrival
 * costs one look per matching queue, not one per waiting poll. A poll that looked while something arrived does not
 * sleep (`mark`, then `wait` with what it returned): no wake-up is lost between a look and a wait.
 *
 * Nest-free: a channel's signal (the agents' WorkSignal, say) owns one and calls `arrived` from its event listeners.
 */
export class WaitRoom<T> {
  private readonly organizations = new Map<string, OrganizationPolls<T>>();
  private shuttingDown = false;

  /** Set once the instance begins to stop (`shutDown`): polls then answer at once and do not wait. */
  get closing(): boolean {
    return this.shuttingDown;
  }

  /**
   * Opens a long poll of the queue `key` in the organization, before its first look (so an arrival during the look is
   * not missed); `data` is what arrivals are matched against (the same for every poll of a key). Close it when the
   * poll answers.
   */
  open(organizationId: string, key: string, data: T): LongPoll<T> {
    let polls = this.organizations.get(organizationId);
    if (!polls) {
      polls = new OrganizationPolls<T>();
      this.organizations.set(organizationId, polls);
    }
    polls.open++;
    return new LongPoll(this, organizationId, polls, key, data);
  }

  /** Work arrived in the organization, in the queues `matches` accepts (all of them without it): wakes the oldest poll of each. */
  arrived(organizationId: string, matches: ArrivalMatch<T> = everyQueue): void {
    const polls = this.organizations.get(organizationId);
    if (!polls) return;
    polls.version++;
    for (const [key, group] of polls.groups) {
      if (matches(group.data, key)) wakeFirst(group.waiters, 'woken');
    }
  }

  /** Wakes every waiting poll of every organization (arrivals may have been missed: with `woken`, each looks again). */
  wakeEveryone(outcome: WaitOutcome): void {
    for (const polls of this.organizations.values()) {
      polls.version++;
      for (const group of polls.groups.values()) for (const waiter of [...group.waiters]) waiter.wake(outcome);
    }
  }

  /** The instance begins to stop: waiting polls answer at once (`timeout`), and new ones do not wait. */
  shutDown(): void {
    this.shuttingDown = true;
    this.wakeEveryone('timeout');
  }

  /** Polls opened and not yet closed, of one organization or of all. */
  opened(organizationId?: string): number {
    if (organizationId !== undefined) return this.organizations.get(organizationId)?.open ?? 0;
    let open = 0;
    for (const polls of this.organizations.values()) open += polls.open;
    return open;
  }

  /** Polls waiting now (in `wait`), of one organization or of all. */
  waiting(organizationId?: string): number {
    const all = organizationId === undefined ? [...this.organizations.values()] : [this.organizations.get(organizationId)];
    let waiting = 0;
    for (const polls of all) for (const group of polls?.groups.values() ?? []) waiting += group.waiters.size;
    return waiting;
  }

  /** @internal a closed poll's organization is forgotten once it has none open. */
  release(organizationId: string, polls: OrganizationPolls<T>): void {
    polls.open--;
    if (polls.open === 0 && this.organizations.get(organizationId) === polls) this.organizations.delete(organizationId);
  }
}

function wakeFirst(waiters: Set<Waiter>, outcome: WaitOutcome): void {
  const [first] = waiters;
  first?.wake(outcome);
}

/**
 * One long poll: between looks it waits, holding nothing but a timer, until work may have arrived, `ms` pass, or its
 * client goes away. Its loop: `mark`, look; took work → `tookWork` and answer; else `wait(ms, marked)` and look again;
 * `close` when it answers, whatever the reason.
 */
export class LongPoll<T> {
  /** Woken for an arrival and not yet looked: must look, or pass the turn on. */
  private owed = false;
  private closed = false;

  constructor(
    private readonly room: WaitRoom<T>,
    private readonly organizationId: string,
    private readonly polls: OrganizationPolls<T>,
    private readonly key: string,
    private readonly data: T,
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
    if (this.room.closing) return Promise.resolve('timeout');
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
    this.room.release(this.organizationId, this.polls);
  }

  private passOn(): void {
    this.owed = false;
    const group = this.polls.groups.get(this.key);
    if (group) wakeFirst(group.waiters, 'woken');
  }

  private group(): Group<T> {
    let group = this.polls.groups.get(this.key);
    if (!group) {
      group = { data: this.data, waiters: new Set() };
      this.polls.groups.set(this.key, group);
    }
    return group;
  }
}
