import type { AgentPolicy } from '../contract/agent-channel';
import { parseChoice, routerCandidates } from './router';

const policy = (fields: { allowServiceRouterByok?: boolean; blockedModelIds?: string[]; customModels?: Array<Record<string, unknown>> }) =>
  ({
    modelPolicy: {
      allowedModelIds: [],
      blockedModelIds: fields.blockedModelIds ?? [],
      allowCustomModels: true,
      allowedBaseUrls: [],
      allowAllServiceModels: true,
      isFastModelsAllowed: true,
      requireExplicitOptInModelIds: [],
      allowServiceRouterByok: fields.allowServiceRouterByok ?? true,
    },
    customModels: fields.customModels ?? [],
  }) as unknown as AgentPolicy;
const custom = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  model: `vendor-${id}`,
  baseUrl: 'https://llm.example.com/v1',
  useInRouter: true,
  ...extra,
});

describe('routerCandidates', () => {
  it("the agent's own model first, then the custom models marked useInRouter by index, each allowed by the model policy", () => {
    const models = [custom('b', { index: 2 }), custom('a', { index: 1 }), custom('off', { useInRouter: false }), custom('blocked')];
    expect(routerCandidates(policy({ customModels: models, blockedModelIds: ['blocked'] }), 'own').map((c) => c.id)).toEqual(['own', 'a', 'b']);
  });

  it("without allowServiceRouterByok, none of the organization's own models; a blocked own model is none either", () => {
    expect(routerCandidates(policy({ allowServiceRouterByok: false, customModels: [custom('a')] }), 'own').map((c) => c.id)).toEqual(['own']);
    expect(routerCandidates(policy({ allowServiceRouterByok: false, blockedModelIds: ['own'] }), 'own')).toEqual([]);
  });
});

describe('parseChoice', () => {
  const candidates = [
    { id: 'coder', own: false },
    { id: 'writer', own: false },
  ];

  it('reads the JSON of the answer, inside a code fence or prose too', () => {
    expect(parseChoice('{"model": "writer", "reason": "prose"}', candidates)).toEqual({ id: 'writer', reason: 'prose' });
    expect(parseChoice('Sure:\n```json\n{"model":"coder"}\n```', candidates)).toEqual({ id: 'coder', reason: 'no reason given' });
  });

  it('is null for an answer that names no candidate, or is not JSON', () => {
    expect(parseChoice('{"model": "gpt-9"}', candidates)).toBeNull();
    expect(parseChoice('coder', candidates)).toBeNull();
    expect(parseChoice('{"model": ', candidates)).toBeNull();
  });
});
