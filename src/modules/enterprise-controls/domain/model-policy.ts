import { fastRequestOf, ModelRefusal, modelRefusal, restrictsModels as policyRestricts } from '../../../contract/model-policy';
import { EnterpriseSettings, ModelPolicy } from './settings';

export type { ModelRefusal } from '../../../contract/model-policy';
export { underBase } from '../../../contract/model-policy';

/** The organization's model policy with the user's entry of `userModelPolicies` laid over it. */
export function effectiveModelPolicy(settings: EnterpriseSettings, userId: string): ModelPolicy {
  return { ...settings.modelPolicy, ...(settings.userModelPolicies[userId] ?? {}) };
}

/**
 * Whether a user may use a model: the one rule of src/contract/model-policy.ts (the agent applies the
 * same, its model router included), over the user's effective policy.
 */
export function checkModel(settings: EnterpriseSettings, userId: string, model: string): ModelRefusal | null {
  const scope = settings.userModelPolicies[userId] ? 'your model policy' : "your organization's model policy";
  return modelRefusal(effectiveModelPolicy(settings, userId), settings.customModels, model, scope);
}

/** Whether `checkModel` can refuse any model to this user; false under the open defaults. */
export function restrictsModels(settings: EnterpriseSettings, userId: string): boolean {
  return policyRestricts(effectiveModelPolicy(settings, userId), settings.customModels);
}

/** A relayed request that asks the vendor for fast processing while the user's `isFastModelsAllowed` is off, or null. */
export function fastRequestRefusal(settings: EnterpriseSettings, userId: string, body: Record<string, unknown>): ModelRefusal | null {
  const asked = effectiveModelPolicy(settings, userId).isFastModelsAllowed ? null : fastRequestOf(body);
  return asked
    ? {
        rule: 'modelPolicy.isFastModelsAllowed',
        detail: `The request asks for fast processing (${asked}), and ${settings.userModelPolicies[userId] ? 'your model policy' : "your organization's model policy"} does not allow fast models (modelPolicy.isFastModelsAllowed).`,
      }
    : null;
}
