import { createPatch } from 'rfc6902';
import { maskSecret } from './secret-mask';
import { EnterpriseSettings } from './settings';
import { mapSettingsSecrets, pointerSegments } from './settings-secrets';

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
  return mapSettingsSecrets(value, maskSecret, pointerSegments(path));
}

/** The settings as answered: every secret (custom models', MCP servers') masked. */
export function maskSettings(settings: EnterpriseSettings): EnterpriseSettings {
  return mapSettingsSecrets(settings, maskSecret);
}
