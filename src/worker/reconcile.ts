import type { PlacedComputer } from '../contract/worker-channel';

/** What this worker holds of its computers now. */
export interface Held {
  /** Computers with a folder (workspace or agent state) under the data folder. */
  folders: ReadonlySet<string>;
  /** Of those, the ones with a workspace: an agent runs only in one provisioned here. */
  workspaces: ReadonlySet<string>;
  /** Computers whose agent runs here, with the token issue time (`tokenIssuedAt`, as text) it runs with. */
  agents: ReadonlyMap<string, string | undefined>;
  /** Computers with a step running, or claimed since the heartbeat was asked: the answer may not know them yet. */
  busy: ReadonlySet<string>;
}

export interface Plan {
  /** Folders of computers no longer placed here: their agent stopped (SIGKILL: the token is dead), then removed. */
  teardown: string[];
  /** Agents to stop: of computers no longer placed here (SIGKILL), or no longer active (SIGTERM). */
  retire: Array<{ computerId: string; signal: 'SIGTERM' | 'SIGKILL' }>;
  /** Active computers whose agent should run with their current token: not running here, or with an older token (restart). */
  start: Array<{ computerId: string; tokenIssuedAt: number; restart: boolean }>;
}

/**
 * What to change so this worker holds what the server places on it (`desired`, a heartbeat's `computers`): nothing
 * else on its disk, and an agent for each active computer whose workspace is here, with its current token.
 */
export function planReconcile(desired: readonly PlacedComputer[], held: Held): Plan {
  const wanted = new Map(desired.map((computer) => [computer.computerId, computer]));
  const teardown = [...held.folders].filter((computerId) => !wanted.has(computerId) && !held.busy.has(computerId));
  const retire: Plan['retire'] = [];
  for (const computerId of held.agents.keys()) {
    const placed = wanted.get(computerId);
    if (!placed) retire.push({ computerId, signal: 'SIGKILL' });
    else if (placed.status !== 'active') retire.push({ computerId, signal: 'SIGTERM' });
  }
  const start = desired
    .filter((computer) => computer.status === 'active' && held.workspaces.has(computer.computerId))
    .filter((computer) => held.agents.get(computer.computerId) !== String(computer.tokenIssuedAt))
    .map((computer) => ({ computerId: computer.computerId, tokenIssuedAt: computer.tokenIssuedAt, restart: held.agents.has(computer.computerId) }));
  return { teardown, retire, start };
}
