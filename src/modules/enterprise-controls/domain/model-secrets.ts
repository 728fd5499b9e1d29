import { FieldError } from '../../../platform/http/validation';
import { looksMasked, maskSecret } from './secret-mask';
import { CLOUD_MODEL_CONFIG_FIELDS, CustomModel } from './settings';

/** The `cloudModelConfig` fields that carry credentials (a token, or a command that mints one). */
export const CLOUD_SECRET_FIELDS = ['cloudAuthRefresh', 'cloudCredentialExport'] as const satisfies ReadonlyArray<(typeof CLOUD_MODEL_CONFIG_FIELDS)[number]>;

/** Where one secret of a custom model sits: `['apiKey']`, `['extraHeaders', name]` or `['cloudModelConfig', field]`. */
export type SecretPath = readonly [string] | readonly [string, string];

/**
 * A copy of the model with each secret replaced by `replace(value, path)`: the one walk that
 * masking, encryption and decryption share, so a secret field cannot be missed by one of them.
 */
export function mapSecrets(model: CustomModel, replace: (value: string, path: SecretPath) => string): CustomModel {
  const copy: CustomModel = { ...model };
  if (model.apiKey !== undefined) copy.apiKey = replace(model.apiKey, ['apiKey']);
  if (model.extraHeaders) {
    copy.extraHeaders = Object.fromEntries(Object.entries(model.extraHeaders).map(([name, value]) => [name, replace(value, ['extraHeaders', name])]));
  }
  if (model.cloudModelConfig) {
    const config = { ...model.cloudModelConfig };
    for (const field of CLOUD_SECRET_FIELDS) {
      const value = config[field];
      if (value !== undefined) config[field] = replace(value, ['cloudModelConfig', field]);
    }
    copy.cloudModelConfig = config;
  }
  return copy;
}

/** The model's secret at `path`, if it has one there. */
export function secretAt(model: CustomModel, path: SecretPath): string | undefined {
  if (path.length === 1) return path[0] === 'apiKey' ? model.apiKey : undefined;
  const [group, name] = path;
  if (group === 'extraHeaders') return Object.hasOwn(model.extraHeaders ?? {}, name) ? model.extraHeaders![name] : undefined;
  if (group === 'cloudModelConfig') return (model.cloudModelConfig as Record<string, string> | undefined)?.[name];
  return undefined;
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

/**
 * Masked secrets sent back in a change stand for the stored ones of the custom model with the same
 * id, and are replaced by them in `after`, but only while that model still sends to the same
 * destination: otherwise a manager could point a model at their own server and receive its key.
 * Moving a model that has a stored key also needs the key sent again (absent is refused too), so a
 * key never follows a model anywhere unnoticed. Returns a problem for each secret that cannot be kept.
 */
export function restoreMaskedSecrets(after: CustomModel[], before: CustomModel[]): FieldError[] {
  const problems: FieldError[] = [];
  after.forEach((model, index) => {
    const stored = before.find((candidate) => candidate.id === model.id);
    const moved = stored !== undefined && destinationOf(stored) !== destinationOf(model) ? { from: destinationOf(stored), to: destinationOf(model) } : null;
    const field = (path: SecretPath) => `settings.customModels[${index}].${path.join('.')}`;
    if (moved && stored!.apiKey !== undefined && model.apiKey === undefined) {
      problems.push({
        field: field(['apiKey']),
        message:
          `is absent while custom model "${model.id}" moves from ${moved.from.trim()} to ${moved.to.trim()}: its stored key stays with the old address. ` +
          'Send the key for the new address in full; to use it without a key, first remove the key in a change that keeps the old address',
      });
    }
    Object.assign(
      model,
      mapSecrets(model, (value, path) => {
        if (!looksMasked(value)) return value;
        const kept = stored === undefined ? undefined : secretAt(stored, path);
        if (kept !== undefined && maskSecret(kept) === value && !moved) return kept;
        problems.push({
          field: field(path),
          message:
            kept === undefined
              ? `is a masked value, and custom model "${model.id}" has no stored value here to keep; send it in full`
              : moved
                ? `is a masked value, and custom model "${model.id}" now sends to ${moved.to.trim()} instead of ${moved.from.trim()}: a stored secret stays with the address it was given for; send it in full`
                : `is a masked value that is not the stored value's mask for custom model "${model.id}"; send it in full, or the masked value as read`,
        });
        return value;
      }),
    );
  });
  return problems;
}

/**
 * Headers the relay sets itself, or that would change where or how a request goes: an
 * `extraHeaders` entry may not name them. `authorization` is refused only when the model has an `apiKey`.
 */
const RESERVED_HEADERS = new Set([
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
