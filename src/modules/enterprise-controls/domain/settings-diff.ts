import { createPatch } from 'rfc6902';
import { maskApiKey } from './api-key-mask';
import { CustomModel, EnterpriseSettings } from './settings';

export interface PatchOperation {
  op: 'add' | 'remove' | 'replace';
  path: string;
  value?: unknown;
}

/**
 * What a revision changed, as RFC 6902 operations from the previous settings to these, computed
 * on the plain settings (so a replaced key shows even when its mask does not change) and then
 * masked, so the diff an auditor reads holds no secret.
 */
export function diffSettings(before: EnterpriseSettings, after: EnterpriseSettings): PatchOperation[] {
  return createPatch(before, after).map((operation) => {
    if (operation.op !== 'add' && operation.op !== 'remove' && operation.op !== 'replace') {
      throw new Error(`diffSettings: unexpected operation ${operation.op}`);
    }
    return 'value' in operation ? { op: operation.op, path: operation.path, value: maskedValue(operation.path, operation.value) } : { op: operation.op, path: operation.path };
  });
}

function maskedValue(path: string, value: unknown): unknown {
  if (/^\/customModels\/(\d+|-)\/apiKey$/.test(path)) return maskApiKey(value as string);
  if (/^\/customModels\/(\d+|-)$/.test(path)) return maskModel(value as CustomModel);
  if (path === '/customModels') return (value as CustomModel[]).map(maskModel);
  if (path === '') return maskSettings(value as EnterpriseSettings);
  return value;
}

function maskModel(model: CustomModel): CustomModel {
  return model.apiKey === undefined ? model : { ...model, apiKey: maskApiKey(model.apiKey) };
}

/** The settings as answered: every custom model's key masked. */
export function maskSettings(settings: EnterpriseSettings): EnterpriseSettings {
  return { ...settings, customModels: settings.customModels.map(maskModel) };
}
