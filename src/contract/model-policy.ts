/**
 * The one rule of `modelPolicy`: whether a model may be used. The server applies it to sessions' models
 * and the model relay; the reference agent to the model it is about to call. Both import this module,
 * so the two cannot read the policy differently.
 */

/** The fields of `modelPolicy` the rule reads (the caller's effective policy: `userModelPolicies` laid over). */
export interface ModelPolicyRules {
  allowAllServiceModels: boolean;
  allowedModelIds: string[];
  blockedModelIds: string[];
  requireExplicitOptInModelIds: string[];
  allowCustomModels: boolean;
  allowedBaseUrls: string[];
  /** Off: no fast model, and no request for fast processing (see fastModeOf, fastRequestOf). Absent: on, as its default. */
  isFastModelsAllowed?: boolean;
}

/** What the rule reads of a custom model: the vendor's model name and the arguments sent with every request. */
export interface PolicyModel {
  id: string;
  baseUrl: string;
  model?: string;
  extraArgs?: Record<string, unknown>;
  /** Where an agent reaches the model itself, with its computer's cloud credentials. */
  cloudModelConfig?: { cloudBaseUrl?: string };
}

/** Why a model may not be used: the rule (a settings path) and a sentence naming it. */
export interface ModelRefusal {
  rule: string;
  detail: string;
}

/**
 * Whether a model may be used, by these rules in order:
 * 1. a model in `blockedModelIds` is refused, and so is a fast model while `isFastModelsAllowed` is off;
 * 2. a custom model (its id names an entry of `customModels`) needs `allowCustomModels`, and its
 *    `baseUrl` (and `cloudModelConfig.cloudBaseUrl`) must lie under one of `allowedBaseUrls` when that list is not empty;
 * 3. a model in `requireExplicitOptInModelIds` must also be in `allowedModelIds`;
 * 4. any other model is allowed under `allowAllServiceModels`, else only if in `allowedModelIds`.
 * `scope` names whose policy it is, for the sentence ("your organization's model policy").
 */
export function modelRefusal(
  policy: ModelPolicyRules,
  customModels: ReadonlyArray<PolicyModel>,
  model: string,
  scope = "your organization's model policy",
): ModelRefusal | null {
  if (policy.blockedModelIds.includes(model)) {
    return { rule: 'modelPolicy.blockedModelIds', detail: `Model "${model}" is blocked by ${scope} (modelPolicy.blockedModelIds).` };
  }
  const custom = customModels.find((candidate) => candidate.id === model);
  const fast = policy.isFastModelsAllowed === false ? fastModeOf(custom?.model ?? model, custom?.extraArgs) : null;
  if (fast) {
    return {
      rule: 'modelPolicy.isFastModelsAllowed',
      detail: `Model "${model}" is a fast model (${fast}), and ${scope} does not allow fast models (modelPolicy.isFastModelsAllowed).`,
    };
  }
  if (custom) {
    if (!policy.allowCustomModels) {
      return {
        rule: 'modelPolicy.allowCustomModels',
        detail: `Model "${model}" is a custom model, and ${scope} does not allow custom models (modelPolicy.allowCustomModels).`,
      };
    }
    // Both addresses it may be reached at: through the relay, and from the computer with cloud credentials.
    const outside = [custom.baseUrl, custom.cloudModelConfig?.cloudBaseUrl].find(
      (url) => url !== undefined && policy.allowedBaseUrls.length > 0 && !policy.allowedBaseUrls.some((base) => underBase(url, base)),
    );
    if (outside !== undefined) {
      return {
        rule: 'modelPolicy.allowedBaseUrls',
        detail: `Custom model "${model}" calls ${outside}, which is not under any of modelPolicy.allowedBaseUrls.`,
      };
    }
    return null;
  }
  const listed = policy.allowedModelIds.includes(model);
  if (policy.requireExplicitOptInModelIds.includes(model) && !listed) {
    return {
      rule: 'modelPolicy.requireExplicitOptInModelIds',
      detail: `Model "${model}" needs explicit opt-in (modelPolicy.requireExplicitOptInModelIds) and is not in modelPolicy.allowedModelIds.`,
    };
  }
  if (!policy.allowAllServiceModels && !listed) {
    return { rule: 'modelPolicy.allowedModelIds', detail: `Model "${model}" is not in the allowed models of ${scope} (modelPolicy.allowedModelIds).` };
  }
  return null;
}

/**
 * `https://llm.example.com/v1/chat` is under `https://llm.example.com/v1` and under itself, not under
 * `https://llm.example.co`, `https://llm.example.com:8443` or `https://llm.example.com/v10`. Compared as
 * parsed URLs (scheme, host and port equal; path segment by segment), so no spelling of either
 * (case, default port, `..`, a user name before the host) can pass for another.
 */
export function underBase(url: string, base: string): boolean {
  if (!URL.canParse(url) || !URL.canParse(base)) return false;
  const target = new URL(url);
  const prefix = new URL(base);
  if (target.username !== '' || target.password !== '' || prefix.search !== '' || prefix.hash !== '') return false;
  if (target.protocol !== prefix.protocol || target.host !== prefix.host) return false;
  const path = prefix.pathname.replace(/\/+$/, '');
  return target.pathname === path || target.pathname.startsWith(`${path}/`);
}

/**
 * Why a model is a fast one, or null. A fast model is a model served at a premium for speed: the vendors name
 * such variants `...-fast` (`claude-opus-4.8-fast`, `grok-code-fast-1`), and ask for it per request with
 * Anthropic's `speed: "fast"` or a `service_tier` of `priority` (OpenAI) or `fast` (OpenRouter); a custom model
 * whose `extraArgs` send one of those is fast too.
 */
export function fastModeOf(model: string, extraArgs: Record<string, unknown> = {}): string | null {
  if (/(^|[-_.:/])fast($|[-_.:@])/i.test(model)) return `its name, ${model}, marks it fast`;
  const asked = fastRequestOf(extraArgs);
  return asked ? `its extraArgs ask for ${asked}` : null;
}

/** The field of a request body that asks the vendor for fast processing (`speed: "fast"`, a fast `service_tier`), or null. */
export function fastRequestOf(body: Record<string, unknown>): string | null {
  if (body.speed === 'fast') return 'speed "fast"';
  if (body.service_tier === 'priority' || body.service_tier === 'fast') return `service_tier "${body.service_tier}"`;
  return null;
}

/** Whether the rule can refuse any model under this policy; false under the open defaults. */
export function restrictsModels(policy: ModelPolicyRules, customModels: ReadonlyArray<unknown>): boolean {
  return (
    policy.blockedModelIds.length > 0 ||
    policy.isFastModelsAllowed === false ||
    !policy.allowAllServiceModels ||
    policy.requireExplicitOptInModelIds.length > 0 ||
    (customModels.length > 0 && (!policy.allowCustomModels || policy.allowedBaseUrls.length > 0))
  );
}
