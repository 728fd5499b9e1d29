import { LongPoll, WaitOutcome, WaitRoom } from './wait-room';

/** A queue of agents' work: its computer (null: the unrouted queue). */
interface Queue {
  computerId: string | null;
}

const LONG = 60_000;

/** Lets promises that were resolved settle (their `then`s run), without moving the clock. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** A poll waiting up to `ms`, after a look that found nothing; `outcome` is set when its wait ends. */
function waitOn(poll: LongPoll<unknown>, ms = LONG, abandoned?: AbortSignal): { outcome?: WaitOutcome } {
  const state: { outcome?: WaitOutcome } = {};
  void poll.wait(ms, poll.mark(), abandoned).then((outcome) => (state.outcome = outcome));
  return state;
}

/** What the room still holds: the organizations it tracks (none once every poll is closed), and their queues with polls waiting. */
function held(room: WaitRoom<unknown>): { organizations: number; queues: number } {
  const organizations = (room as unknown as { organizations: Map<string, { groups: Map<string, unknown> }> }).organizations;
  let queues = 0;
  for (const polls of organizations.values()) queues += polls.groups.size;
  return { organizations: organizations.size, queues };
}

describe('WaitRoom', () => {
  let room: WaitRoom<Queue>;

  beforeEach(() => {
    jest.useFakeTimers();
    room = new WaitRoom<Queue>();
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('wakes only the oldest poll of a queue; the one that took work wakes the next', async () => {
    const polls = [1, 2, 3].map(() => room.open('org', 'c1', { computerId: 'c1' }));
    const waits = polls.map((poll) => waitOn(poll));
    expect(room.waiting('org')).toBe(3);

    room.arrived('org');
    await settle();
    expect(waits.map((w) => w.outcome)).toEqual(['woken', undefined, undefined]);

    // The first looks (mark), takes work and answers: more may be waiting, so the second looks.
    polls[0].mark();
    polls[0].tookWork();
    polls[0].close();
    await settle();
    expect(waits.map((w) => w.outcome)).toEqual(['woken', 'woken', undefined]);

    // The second looks and finds nothing: it passes nothing on.
    const again = waitOn(polls[1]);
    await settle();
    expect(waits[2].outcome).toBeUndefined();
    expect(room.waiting('org')).toBe(2);

    // The next arrival wakes the oldest waiting now: the third (it waited before the second waited again).
    room.arrived('org');
    await settle();
    expect(waits[2].outcome).toBe('woken');
    expect(again.outcome).toBeUndefined();

    polls[1].close();
    polls[2].close();
  });

  it('a poll woken that goes away without looking passes its turn to the next of its queue', async () => {
    const [first, second] = [1, 2].map(() => room.open('org', 'c1', { computerId: 'c1' }));
    const [w1, w2] = [first, second].map((poll) => waitOn(poll));
    room.arrived('org');
    await settle();
    expect([w1.outcome, w2.outcome]).toEqual(['woken', undefined]);

    first.close();
    await settle();
    expect(w2.outcome).toBe('woken');
    second.close();
  });

  it('wakes the queues an arrival matches, the oldest poll of each, and no other', async () => {
    const c1 = [room.open('org', 'c1|', { computerId: 'c1' }), room.open('org', 'c1|', { computerId: 'c1' })];
    const c1Owner = room.open('org', 'c1|owner', { computerId: 'c1' });
    const c2 = room.open('org', 'c2|', { computerId: 'c2' });
    const unrouted = room.open('org', '|', { computerId: null });
    const [w1a, w1b, w1Owner, w2, wUnrouted] = [...c1, c1Owner, c2, unrouted].map((poll) => waitOn(poll));

    room.arrived('org', (queue) => queue.computerId === 'c1');
    await settle();
    expect([w1a.outcome, w1b.outcome, w1Owner.outcome, w2.outcome, wUnrouted.outcome]).toEqual(['woken', undefined, 'woken', undefined, undefined]);

    room.arrived('org', (queue) => queue.computerId === null);
    await settle();
    expect([w1b.outcome, w2.outcome, wUnrouted.outcome]).toEqual([undefined, undefined, 'woken']);

    // Without a match: anywhere in the organization.
    room.arrived('org');
    await settle();
    expect([w1b.outcome, w2.outcome]).toEqual(['woken', 'woken']);

    for (const poll of [...c1, c1Owner, c2, unrouted]) poll.close();
  });

  it('matches by key (a worker waiting on its own assignments)', async () => {
    const workers = new WaitRoom<string>();
    const one = workers.open('org', 'worker:1', '1');
    const two = workers.open('org', 'worker:2', '2');
    const [w1, w2] = [one, two].map((poll) => waitOn(poll));
    workers.arrived('org', (_, key) => key === 'worker:2');
    await settle();
    expect([w1.outcome, w2.outcome]).toEqual([undefined, 'woken']);
    workers.arrived('org', (id) => id === '1');
    await settle();
    expect(w1.outcome).toBe('woken');
    one.close();
    two.close();
    expect(workers.opened()).toBe(0);
  });

  it('loses no wake-up: an arrival between the look and the wait, in any queue of the organization, ends the wait at once', async () => {
    const poll = room.open('org', 'c1', { computerId: 'c1' });
    let seen = poll.mark();
    // The look found nothing; meanwhile the work arrived (its signal before the poll waits).
    room.arrived('org', (queue) => queue.computerId === 'c1');
    await expect(poll.wait(LONG, seen)).resolves.toBe('woken');

    seen = poll.mark();
    room.arrived('org', (queue) => queue.computerId === 'elsewhere');
    await expect(poll.wait(LONG, seen)).resolves.toBe('woken');
    expect(room.waiting()).toBe(0);

    // Nothing arrived since the mark: it waits.
    const state = waitOn(poll);
    await settle();
    expect(state.outcome).toBeUndefined();
    expect(room.waiting('org')).toBe(1);
    room.shutDown();
    await settle();
    expect(state.outcome).toBe('timeout');
    poll.close();
  });

  it('ends a wait after its time (timeout) and when its client goes away (abandoned)', async () => {
    const poll = room.open('org', 'c1', { computerId: 'c1' });
    const timed = waitOn(poll, 1_000);
    await jest.advanceTimersByTimeAsync(999);
    expect(timed.outcome).toBeUndefined();
    await jest.advanceTimersByTimeAsync(1);
    expect(timed.outcome).toBe('timeout');

    const client = new AbortController();
    const abandoned = waitOn(poll, LONG, client.signal);
    await settle();
    expect(abandoned.outcome).toBeUndefined();
    client.abort();
    await settle();
    expect(abandoned.outcome).toBe('abandoned');
    expect(room.waiting()).toBe(0);
    expect(jest.getTimerCount()).toBe(0);

    // Gone already: no wait at all.
    await expect(poll.wait(LONG, poll.mark(), client.signal)).resolves.toBe('abandoned');
    poll.close();
  });

  it('keeps organizations apart: an arrival in one never wakes, nor makes look again, a poll of another', async () => {
    const a = room.open('org-a', 'c1', { computerId: 'c1' });
    const b = room.open('org-b', 'c1', { computerId: 'c1' });
    const waitA = waitOn(a);
    const seenB = b.mark();
    room.arrived('org-b');
    room.arrived('org-c');
    await settle();
    expect(waitA.outcome).toBeUndefined();

    // org-a's arrival wakes its poll; org-b's poll, which looked meanwhile, still waits.
    const againB = waitOn(b);
    const seenAfterB = b.mark();
    room.arrived('org-a');
    await settle();
    expect(waitA.outcome).toBe('woken');
    expect(againB.outcome).toBeUndefined();
    const waitB = { outcome: undefined as WaitOutcome | undefined };
    void b.wait(LONG, seenAfterB).then((outcome) => (waitB.outcome = outcome));
    await settle();
    expect(waitB.outcome).toBeUndefined();
    expect(seenAfterB).toBeGreaterThan(seenB);

    expect(room.opened('org-a')).toBe(1);
    expect(room.opened('org-b')).toBe(1);
    expect(room.waiting('org-b')).toBe(2);
    room.shutDown();
    a.close();
    b.close();
  });

  it('forgets a poll when it closes, and an organization when its last poll does: nothing is left behind', async () => {
    const polls = [
      room.open('org-a', 'c1', { computerId: 'c1' }),
      room.open('org-a', 'c2', { computerId: 'c2' }),
      room.open('org-b', '', { computerId: null }),
    ];
    const client = new AbortController();
    polls.forEach((poll, i) => waitOn(poll, 1_000 * (i + 1), i === 2 ? client.signal : undefined));
    expect(room.opened()).toBe(3);
    expect(room.waiting()).toBe(3);

    room.arrived('org-a', (queue) => queue.computerId === 'c1');
    client.abort();
    await jest.advanceTimersByTimeAsync(2_000);
    expect(room.waiting()).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
    expect(held(room)).toEqual({ organizations: 2, queues: 0 });

    for (const poll of polls) poll.close();
    polls[0].close(); // a second close does nothing
    expect(room.opened()).toBe(0);
    expect(room.opened('org-a')).toBe(0);
    expect(held(room)).toEqual({ organizations: 0, queues: 0 });

    // A new poll of a forgotten organization starts afresh and still waits for, and is woken by, its arrivals.
    const fresh = room.open('org-a', 'c1', { computerId: 'c1' });
    const wait = waitOn(fresh);
    room.arrived('org-a');
    await settle();
    expect(wait.outcome).toBe('woken');
    fresh.close();
    expect(held(room)).toEqual({ organizations: 0, queues: 0 });
  });

  it('wakes every poll of every organization when arrivals may have been missed', async () => {
    const polls = [
      room.open('org-a', 'c1', { computerId: 'c1' }),
      room.open('org-a', 'c1', { computerId: 'c1' }),
      room.open('org-b', '', { computerId: null }),
    ];
    const waits = polls.map((poll) => waitOn(poll));
    room.wakeEveryone('woken');
    await settle();
    expect(waits.map((w) => w.outcome)).toEqual(['woken', 'woken', 'woken']);
    for (const poll of polls) poll.close();
  });

  it('on shutdown, answers waiting polls at once and lets no new one wait', async () => {
    const poll = room.open('org', 'c1', { computerId: 'c1' });
    const waiting = waitOn(poll);
    expect(room.closing).toBe(false);
    room.shutDown();
    await settle();
    expect(room.closing).toBe(true);
    expect(waiting.outcome).toBe('timeout');
    await expect(poll.wait(LONG, poll.mark())).resolves.toBe('timeout');
    expect(room.waiting()).toBe(0);
    poll.close();
  });
});
