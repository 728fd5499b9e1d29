import { FieldError } from '../../../platform/http/validation';
import { looksMasked, maskSecret } from './secret-mask';

/**
 * Where the settings hold secrets, as JSON Pointer segments (`*`: any one segment): custom models'
 * keys, header values and cloud credentials, MCP servers' header and environment values. The one
 * list that masking, encryption, decryption, restoring masked values and diffs all walk, so a secret
 * field added here is handled by every one of them, and one left out by none.
 */
export const SECRET_POINTERS: ReadonlyArray<readonly string[]> = [
  ['customModels', '*', 'apiKey'],
  ['customModels', '*', 'extraHeaders', '*'],
  ['customModels', '*', 'cloudModelConfig', 'cloudAuthRefresh'],
  ['customModels', '*', 'cloudModelConfig', 'cloudCredentialExport'],
  ['mcpServers', '*', 'headers', '*'],
  ['mcpServers', '*', 'env', '*'],
];

/** A secret's place in the settings: the segments of its JSON Pointer (`['mcpServers', '0', 'env', 'TOKEN']`). */
export type SecretLocation = readonly string[];

function matches(pattern: readonly string[], path: readonly string[], whole: boolean): boolean {
  if (whole ? path.length !== pattern.length : path.length > pattern.length) return false;
  return path.every((segment, i) => pattern[i] === '*' || pattern[i] === segment);
}

/**
 * A copy of `value`, which sits at `at` in the settings (`[]` for the whole settings), with each
 * secret string in it replaced by `replace(secret, location)`. Parts that hold no secret are shared,
 * not copied.
 */
export function mapSettingsSecrets<T>(value: T, replace: (secret: string, location: SecretLocation) => string, at: readonly string[] = []): T {
  if (typeof value === 'string') return (SECRET_POINTERS.some((pattern) => matches(pattern, at, true)) ? replace(value, at) : value) as T;
  if (value === null || typeof value !== 'object' || !SECRET_POINTERS.some((pattern) => matches(pattern, at, false))) return value;
  if (Array.isArray(value)) return value.map((item, index) => mapSettingsSecrets(item, replace, [...at, String(index)])) as T;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapSettingsSecrets(item, replace, [...at, key])])) as T;
}

/** The secret at a location of the settings, if there is one there. */
export function secretAtLocation(settings: unknown, location: SecretLocation): string | undefined {
  let node: unknown = settings;
  for (const segment of location) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, segment)) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return typeof node === 'string' ? node : undefined;
}

/** A JSON Pointer as its segments (`/a~1b/c` → `['a/b', 'c']`). */
export function pointerSegments(pointer: string): string[] {
  return pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** A list of the settings whose entries hold secrets: how an entry is known across revisions, and where its secrets go. */
export interface SecretHolders<T> {
  list: 'customModels' | 'mcpServers';
  /** How answers name an entry: `custom model "team"`. */
  noun: (entry: T) => string;
  /** What identifies an entry from one revision to the next (a model's `id`, a server's `name`). */
  key: (entry: T) => string;
  /** Where the entry sends its secrets; a secret was given for this, and stays bound to it. */
  destination: (entry: T) => string;
}

/**
 * Masked secrets sent back in a change stand for the stored ones of the entry with the same key, and
 * are replaced by them in `after`, but only while that entry still sends to the same destination:
 * otherwise a manager could point it at their own server and receive its secrets. Returns a problem
 * for each masked value that cannot be kept.
 */
export function restoreMaskedIn<T extends object>(holders: SecretHolders<T>, after: T[], before: T[]): FieldError[] {
  const problems: FieldError[] = [];
  after.forEach((entry, index) => {
    const stored = before.find((candidate) => holders.key(candidate) === holders.key(entry));
    const moved =
      stored !== undefined && holders.destination(stored) !== holders.destination(entry)
        ? { from: holders.destination(stored).trim(), to: holders.destination(entry).trim() }
        : null;
    const restored = mapSettingsSecrets(
      entry,
      (value, location) => {
        if (!looksMasked(value)) return value;
        const path = location.slice(2);
        const kept = stored === undefined ? undefined : secretAtLocation(stored, path);
        if (kept !== undefined && maskSecret(kept) === value && !moved) return kept;
        const noun = holders.noun(entry);
        problems.push({
          field: `settings.${holders.list}[${index}].${path.join('.')}`,
          message:
            kept === undefined
              ? `is a masked value, and ${noun} has no stored value here to keep; send it in full`
              : moved
                ? `is a masked value, and ${noun} now sends to ${moved.to} instead of ${moved.from}: a stored secret stays with the address it was given for; send it in full`
                : `is a masked value that is not the stored value's mask for ${noun}; send it in full, or the masked value as read`,
        });
        return value;
      },
      [holders.list, String(index)],
    );
    Object.assign(entry, restored);
  });
  return problems;
}
