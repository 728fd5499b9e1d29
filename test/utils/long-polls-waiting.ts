import { LongPollSlots } from '../../src/modules/agent-channel/long-poll-slots';
import { LONG_WAIT_MS, until } from './polling';
import type { TestApp } from './test-app';

/**
 * Until `count` long polls of the organization wait on the instance (claims with `waitMs`, an agent's wait for a tool
 * approval): past their first look, each holding its slot (LongPollSlots). A test then acts on polls known to be
 * waiting, however long the machine took to get them there, instead of sleeping for a guess.
 */
export function pollsWaiting(t: TestApp, organizationId: string, count: number): Promise<number> {
  const slots = t.app.get(LongPollSlots);
  return until(
    () => slots.waiting(organizationId),
    (n) => n === count,
    `${count} long polls of the organization to wait`,
    LONG_WAIT_MS,
  );
}
