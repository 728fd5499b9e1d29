import { FieldError } from '../../../platform/http/validation';
import { maskSecret } from './secret-mask';
import { mapSettingsSecrets, restoreMaskedIn, SecretHolders, secretAtLocation } from './settings-secrets';
import { CustomModel } from './settings';

/** Where one secret of a custom model sits: `['apiKey']`, `['extraHeaders', name]` or `['cloudModelConfig', field]`. */
export type SecretPath = readonly [string] | readonly [string, string];

/** A copy of the model with each secret replaced by `replace(value, path)` (the settings' one walk, SECRET_POINTERS). */
export function mapSecrets(model: CustomModel, replace: (value: string, path: SecretPath) => string): CustomModel {
  return mapSettingsSecrets(model, (value, location) => replace(value, location.slice(2) as unknown as SecretPath), ['customModels', '0']);
}

/** The model's secret at `path`, if it has one there. */
export function secretAt(model: CustomModel, path: SecretPath): string | undefined {
  return secretAtLocation(model, path);
}

/** Every secret of the model, in plain text: what a vendor's answer must never quote back. */
export function secretsOf(model: CustomModel): string[] {
  const values: string[] = [];
  mapSecrets(model, (value) => (values.push(value), value));
  return values;
}

export function maskModel(model: CustomModel): CustomModel {
  return mapSecrets(model, maskSecret);
}

/**
 * Where the model's secrets go: the origins of `baseUrl` and of `cloudModelConfig.cloudBaseUrl`.
 * A secret was given for these, and stays bound to them.
 */
export function destinationOf(model: CustomModel): string {
  return [model.baseUrl, model.cloudModelConfig?.cloudBaseUrl].map((url) => (url === undefined ? '' : originOf(url))).join(' ');
}

function originOf(url: string): string {
  return URL.canParse(url) ? new URL(url).origin : url;
}

/** Custom models in restoring masked secrets: known by `id`, sending to the origins of their URLs. */
export const CUSTOM_MODEL_SECRETS: SecretHolders<CustomModel> = {
  list: 'customModels',
  noun: (model) => `custom model "${model.id}"`,
  key: (model) => model.id,
  destination: destinationOf,
};

/**
 * Masked secrets of custom models (restoreMaskedIn). Moving a model that has a stored key also needs
 * the key sent again (absent is refused too), so a key never follows a model anywhere unnoticed.
 */
export function restoreMaskedSecrets(after: CustomModel[], before: CustomModel[]): FieldError[] {
  const problems: FieldError[] = [];
  after.forEach((model, index) => {
    const stored = before.find((candidate) => candidate.id === model.id);
    if (stored === undefined || destinationOf(stored) === destinationOf(model) || stored.apiKey === undefined || model.apiKey !== undefined) return;
    problems.push({
      field: `settings.customModels[${index}].apiKey`,
      message:
        `is absent while custom model "${model.id}" moves from ${destinationOf(stored).trim()} to ${destinationOf(model).trim()}: its stored key stays with the old address. ` +
        'Send the key for the new address in full; to use it without a key, first remove the key in a change that keeps the old address',
    });
  });
  return [...problems, ...restoreMaskedIn(CUSTOM_MODEL_SECRETS, after, before)];
}

/**
 * Headers the relay sets itself, or that would change where or how a request goes: an
 * `extraHeaders` entry may not name them. `authorization` is refused only when the model has an `apiKey`.
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'cookie',
  'cookie2',
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
  'content-length',
  'content-type',
  'content-encoding',
  'accept-encoding',
  'forwarded',
  'x-real-ip',
  'via',
]);

/** Problems with the names of each model's `extraHeaders`: reserved names, and two names that differ only in case. */
export function extraHeaderProblems(models: CustomModel[]): FieldError[] {
  return models.flatMap((model, index) => {
    const seen = new Map<string, string>();
    return Object.keys(model.extraHeaders ?? {}).flatMap((name) => {
      const field = `settings.customModels[${index}].extraHeaders.${name}`;
      const lower = name.toLowerCase();
      if (RESERVED_HEADERS.has(lower) || lower.startsWith('x-forwarded-') || lower.startsWith('proxy-')) {
        return [{ field, message: `names a header the relay sets itself or that changes where a request goes (${lower}); it cannot be an extra header` }];
      }
      if (lower === 'authorization' && model.apiKey !== undefined) {
        return [{ field, message: 'cannot be set while the model has an apiKey: the relay sends the key as Authorization' }];
      }
      if (lower === 'x-api-key' && model.apiKey !== undefined && model.provider === 'anthropic') {
        return [{ field, message: 'cannot be set while the model has an apiKey: the relay sends the key as x-api-key' }];
      }
      const earlier = seen.get(lower);
      seen.set(lower, name);
      return earlier === undefined ? [] : [{ field, message: `duplicates extraHeaders.${earlier} (header names are case-insensitive)` }];
    });
  });
}
