import type { AgentPolicy } from '../contract/agent-channel';
import { modelRefusal } from '../contract/model-policy';
import type { ChatMessage } from './models';

/** The model id a session names to have the model router choose its model, turn by turn. */
export const ROUTER_MODEL_ID = 'router';

/** A model the router may choose. */
export interface RouterCandidate {
  id: string;
  /** The agent's own model (`AGENT_MODEL`), which the organization does not provide. */
  own: boolean;
  displayName?: string;
  baseModelId?: string;
  maxContextLimit?: number;
}

/**
 * The models the router may choose among, in order: the agent's own model, then the organization's custom
 * models marked `useInRouter`, by `index`, when `modelPolicy.allowServiceRouterByok` lets the router use the
 * organization's own models (every custom model is one: its key is the organization's). Each must pass the
 * model policy, as a model the session named would.
 */
export function routerCandidates(policy: AgentPolicy, ownModelId: string | undefined): RouterCandidate[] {
  const allowed = (id: string) => modelRefusal(policy.modelPolicy, policy.customModels, id) === null;
  const candidates: RouterCandidate[] = ownModelId !== undefined && allowed(ownModelId) ? [{ id: ownModelId, own: true }] : [];
  if (!policy.modelPolicy.allowServiceRouterByok) return candidates;
  const custom = [...policy.customModels].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
  for (const model of custom) {
    if (model.useInRouter !== true || model.id === ownModelId || !allowed(model.id)) continue;
    candidates.push({
      id: model.id,
      own: false,
      ...(model.displayName ? { displayName: model.displayName } : {}),
      ...(typeof model.baseModelId === 'string' ? { baseModelId: model.baseModelId } : {}),
      ...(model.maxContextLimit ? { maxContextLimit: model.maxContextLimit } : {}),
    });
  }
  return candidates;
}

/** Characters of the turn's request the routing model reads. */
const REQUEST_CHARS = 4_000;

/**
 * The routing call: the candidates, the organization's `serviceRouterGuidance` and `serviceRouterRules`
 * (`when` → `guidance`), and the turn's request; the answer is one line of JSON.
 */
export function routingPrompt(policy: AgentPolicy, candidates: RouterCandidate[], request: string): ChatMessage[] {
  const models = candidates.map((candidate) => {
    const facts = [
      candidate.displayName ? `named ${candidate.displayName}` : null,
      candidate.baseModelId ? `based on ${candidate.baseModelId}` : null,
      candidate.maxContextLimit ? `context ${candidate.maxContextLimit} tokens` : null,
    ].filter(Boolean);
    return `- ${candidate.id}${facts.length > 0 ? ` (${facts.join('; ')})` : ''}`;
  });
  const rules = policy.serviceRouterRules.map((rule) => `- When ${rule.when}: ${rule.guidance}`);
  const system = [
    "You are a model router. Choose the one model best suited to the coding agent's next turn, following the organization's guidance and rules.",
    `Models:\n${models.join('\n')}`,
    policy.serviceRouterGuidance.trim() ? `Guidance: ${policy.serviceRouterGuidance.trim()}` : null,
    rules.length > 0 ? `Rules (the first that applies wins):\n${rules.join('\n')}` : null,
    'Answer with one line of JSON and nothing else: {"model": "<one of the model ids above>", "reason": "<one short sentence>"}.',
  ].filter(Boolean);
  return [
    { role: 'system', content: system.join('\n\n') },
    { role: 'user', content: request.length > REQUEST_CHARS ? `${request.slice(0, REQUEST_CHARS)}…` : request },
  ];
}

/** The routing model's choice, when its answer names a candidate; null otherwise. */
export function parseChoice(answer: string, candidates: RouterCandidate[]): { id: string; reason: string } | null {
  const json = /\{[^]*\}/.exec(answer)?.[0];
  if (!json) return null;
  try {
    const parsed = JSON.parse(json) as { model?: unknown; reason?: unknown };
    const chosen = candidates.find((candidate) => candidate.id === parsed.model);
    if (!chosen) return null;
    return { id: chosen.id, reason: typeof parsed.reason === 'string' && parsed.reason.trim() ? parsed.reason.trim().slice(0, 500) : 'no reason given' };
  } catch {
    return null;
  }
}
