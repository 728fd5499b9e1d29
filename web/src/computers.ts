import { formatTime } from './format';
import type { Schemas } from './api/client';

export type Computer = Schemas['Computer'];
export type Provider = Schemas['CreateComputerBody']['provider'];
export type ComputerStatus = NonNullable<Computer['status']>;

/**
 * The kinds of computer the API offers (its `provider` enum): typed over it, so a kind the API adds or drops breaks
 * the console's build until it is described here.
 */
export const PROVIDERS: Record<Provider, { label: string; description: string }> = {
  byom: {
    label: 'Your own machine (BYOM)',
    description: 'Register a machine you run (a laptop, a build server). It is active at once; you run its agent on it.',
  },
  local: {
    label: 'Managed workspace (local)',
    description:
      "The server prepares a workspace on its own host, clones your repositories and installs their dependencies, then runs the computer's agent itself.",
  },
};

export const STATUS_LABELS: Record<ComputerStatus, string> = { provisioning: 'Provisioning', active: 'Active', error: 'Error' };

/** Where a computer runs, in a line: "This server", "Worker W (pool P)" or "Waiting for a worker since …". */
export function runsOnLabel(computer: Computer): string | null {
  const runsOn = computer.runsOn;
  if (!runsOn) return null;
  switch (runsOn.kind) {
    case 'server':
      return 'This server';
    case 'worker':
      return `Worker ${runsOn.workerName} (pool ${runsOn.poolName})`;
    case 'waiting':
      return `Waiting for a worker since ${formatTime(runsOn.since)}`;
  }
}

/** A worker label, as the API takes it (`labels` of `POST /api/v0/computers`). */
export const LABEL_PATTERN = /^[a-z0-9][a-z0-9._=/-]{0,62}$/;
export const MAX_LABELS = 16;

/**
 * Labels typed comma separated: the list to send (blanks dropped, each once), or what is wrong with them, checked as
 * the API checks them so the form says so before sending.
 */
export function parseLabels(text: string): { labels: string[]; problem: string | null } {
  const labels = [
    ...new Set(
      text
        .split(',')
        .map((label) => label.trim())
        .filter(Boolean),
    ),
  ];
  const bad = labels.filter((label) => !LABEL_PATTERN.test(label));
  if (bad.length > 0)
    return {
      labels,
      problem: `Not a label: ${bad.map((label) => `“${label}”`).join(', ')}. A label is lower-case letters, digits and . _ = / -, starting with a letter or digit, at most 63 characters.`,
    };
  if (labels.length > MAX_LABELS) return { labels, problem: `At most ${MAX_LABELS} labels (${labels.length} given).` };
  return { labels, problem: null };
}

export const providerLabel = (provider: string) => (provider === 'byom' ? 'BYOM' : provider === 'local' ? 'Managed (local)' : provider);

/**
 * Agent tokens made in this tab and not yet shown: the create page hands the token to the computer's page, which shows
 * it once and forgets it. Memory only (never storage, never a URL), so a reload does not show it again.
 */
const freshTokens = new Map<string, string>();

export function handOverToken(computerId: string, token: string): void {
  freshTokens.set(computerId, token);
}

export function takeToken(computerId: string): string | undefined {
  const token = freshTokens.get(computerId);
  freshTokens.delete(computerId);
  return token;
}

/** `{base_url}`: the computer's `relayAgentUrl` is `{base_url}/api/v0/agent`. */
export function baseUrlOf(computer: Computer): string {
  return (computer.relayAgentUrl ?? `${window.location.origin}/api/v0/agent`).replace(/\/api\/v0\/agent\/?$/, '');
}

/** The reference agent's command line for a computer (docs/agents.md; `npx agent-platform-agent --help`): the token in the environment, never on the command line. */
export function agentCommand(computer: Computer, token: string | undefined): string {
  return [
    `AGENT_TOKEN=${token ?? '"$AGENT_TOKEN"'} \\`,
    `  npx agent-platform-agent --url ${baseUrlOf(computer)} \\`,
    `  --computer ${computer.id} \\`,
    '  --workspace ~/work',
  ].join('\n');
}

/** A random UUID (v4). `crypto.randomUUID` exists only in secure contexts; a console served over plain http still has getRandomValues. */
export function newUuid(): string {
  if (typeof crypto.randomUUID === 'function' && window.isSecureContext) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
