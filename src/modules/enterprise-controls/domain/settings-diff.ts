import { createPatch } from 'rfc6902';
import { CLOUD_SECRET_FIELDS, maskModel } from './model-secrets';
import { maskSecret } from './secret-mask';
import { CustomModel, EnterpriseSettings } from './settings';

export interface PatchOperation {
  op: 'add' | 'remove' | 'replace';
  path: string;
  value?: unknown;
}

/**
 * What a revision changed, as RFC 6902 operations from the previous settings to these, computed
 * on the plain settings (so a replaced secret shows even when its mask does not change) and then
 * masked, so the diff an auditor reads holds no secret.
 */
export function diffSettings(before: EnterpriseSettings, after: EnterpriseSettings): PatchOperation[] {
  return createPatch(before, after).map((operation) => {
    if (operation.op !== 'add' && operation.op !== 'remove' && operation.op !== 'replace') {
      throw new Error(`diffSettings: unexpected operation ${operation.op}`);
    }
    return 'value' in operation
      ? { op: operation.op, path: operation.path, value: maskedValue(operation.path, operation.value) }
      : { op: operation.op, path: operation.path };
  });
}

/** The value at a JSON Pointer of the settings, with whatever secrets it holds masked. */
function maskedValue(path: string, value: unknown): unknown {
  if (path === '') return maskSettings(value as EnterpriseSettings);
  const [top, , field, name] = path
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (top !== 'customModels') return value;
  const depth = path.split('/').length - 1;
  if (depth === 1) return (value as CustomModel[]).map(maskModel);
  if (depth === 2) return maskModel(value as CustomModel);
  if (field === 'apiKey') return maskSecret(value as string);
  if (field === 'extraHeaders') {
    if (depth === 3) return Object.fromEntries(Object.entries(value as Record<string, string>).map(([header, text]) => [header, maskSecret(text)]));
    return maskSecret(value as string);
  }
  if (field === 'cloudModelConfig') {
    const secret = (key: string) => (CLOUD_SECRET_FIELDS as readonly string[]).includes(key);
    if (depth === 3)
      return Object.fromEntries(Object.entries(value as Record<string, string>).map(([key, text]) => [key, secret(key) ? maskSecret(text) : text]));
    return secret(name) ? maskSecret(value as string) : value;
  }
  return value;
}

/** The settings as answered: every secret of every custom model masked. */
export function maskSettings(settings: EnterpriseSettings): EnterpriseSettings {
  return { ...settings, customModels: settings.customModels.map(maskModel) };
}
