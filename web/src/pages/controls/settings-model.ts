import settingsSchema from 'virtual:schema/EnterpriseSettings';
import { resolveSchema, type JsonSchema } from '../../api/json-schema';

/** JSON values, merge patches (RFC 7396) and the paths the API names fields by (`settings.a.b[2].c`). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
export type Path = readonly (string | number)[];

export const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The API's way of naming a field: `settings.sandbox.network.httpProxyPort`, `settings.customModels[0].apiKey`. */
export function pathName(path: Path, root = 'settings'): string {
  return path.reduce<string>((name, segment) => (typeof segment === 'number' ? `${name}[${segment}]` : `${name}.${segment}`), root);
}

/** A readable name for a JSON Pointer of the API's diffs (`/sandbox/network/allowedDomains/0` → `sandbox.network.allowedDomains[0]`). */
export function pointerName(pointer: string): string {
  const segments = pointer
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
  // `-` is RFC 6901's "after the last element" (an entry appended).
  return segments.reduce(
    (name, segment) => (/^\d+$/.test(segment) ? `${name}[${segment}]` : segment === '-' ? `${name}[new entry]` : name ? `${name}.${segment}` : segment),
    '',
  );
}

export function getAt(value: Json | undefined, path: Path): Json | undefined {
  let current: Json | undefined = value;
  for (const segment of path) {
    if (current === undefined || current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, Json>)[segment as never];
  }
  return current;
}

/** A copy of `value` with `next` at `path` (`undefined` removes an object's member). */
export function setAt(value: Json | undefined, path: Path, next: Json | undefined): Json | undefined {
  if (path.length === 0) return next;
  const [head, ...rest] = path;
  if (typeof head === 'number') {
    const list = Array.isArray(value) ? [...value] : [];
    const item = setAt(list[head], rest, next);
    if (item === undefined) list.splice(head, 1);
    else list[head] = item;
    return list;
  }
  const object: JsonObject = isObject(value) ? { ...value } : {};
  const member = setAt(object[head], rest, next);
  if (member === undefined) delete object[head];
  else object[head] = member;
  return object;
}

export function equal(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => equal(item, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => key in b && equal(a[key], b[key]));
  }
  return false;
}

/** The smallest JSON Merge Patch that turns `before` into `after`: objects member by member, anything else whole, `null` removes. */
export function mergePatch(before: JsonObject, after: JsonObject): JsonObject {
  const patch: JsonObject = {};
  for (const key of Object.keys(before)) if (!(key in after)) patch[key] = null;
  for (const [key, value] of Object.entries(after)) {
    const old = before[key];
    if (equal(old, value)) continue;
    patch[key] = isObject(old) && isObject(value) ? mergePatch(old, value) : value;
  }
  return patch;
}

/** RFC 7396: `patch` applied to `target`. */
export function applyMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

/** Every leaf a merge patch sets or removes, as paths (for "your changes"). */
export function patchedPaths(patch: JsonObject, prefix: Path = []): Path[] {
  return Object.entries(patch).flatMap(([key, value]) =>
    isObject(value) && Object.keys(value).length > 0 ? patchedPaths(value, [...prefix, key]) : [[...prefix, key]],
  );
}

/** Pretty JSON with object members sorted, so two snapshots line up line by line. */
export function stableJson(value: Json | undefined): string {
  const sort = (item: Json): Json =>
    Array.isArray(item)
      ? item.map(sort)
      : isObject(item)
        ? Object.fromEntries(
            Object.keys(item)
              .sort()
              .map((key) => [key, sort(item[key])]),
          )
        : item;
  return value === undefined ? '(not set)' : JSON.stringify(sort(value), null, 2);
}

/** `cloudSessionSync` → `Cloud session sync`. */
export function humanize(key: string): string {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .toLowerCase();
  const named = words.replace(/\b(api|url|urls|mcp|ide|ids|ips|byom|sha|http|socks)\b/g, (word) => ACRONYMS[word] ?? word);
  return named.charAt(0).toUpperCase() + named.slice(1);
}
const ACRONYMS: Record<string, string> = {
  api: 'API',
  url: 'URL',
  urls: 'URLs',
  mcp: 'MCP',
  ide: 'IDE',
  ids: 'IDs',
  ips: 'IPs',
  byom: 'BYOM',
  sha: 'SHA',
  http: 'HTTP',
  socks: 'SOCKS',
};

/**
 * Where the settings hold secrets, from their root (`*`: any item or key): the places the API's schema marks `x-secret`
 * (the server encrypts them and answers them masked), found once by walking the settings' schema.
 */
const SECRET_PATHS: readonly (readonly string[])[] = secretPlaces(settingsSchema.schemas[settingsSchema.root]);

function secretPlaces(schema: JsonSchema, at: string[] = [], seen: ReadonlySet<string> = new Set()): string[][] {
  if (schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    return seen.has(name) ? [] : secretPlaces(resolveSchema(schema, settingsSchema.schemas), at, new Set([...seen, name]));
  }
  const places = schema['x-secret'] === true ? [at] : [];
  for (const [key, member] of Object.entries(schema.properties ?? {})) places.push(...secretPlaces(member, [...at, key], seen));
  for (const member of schema.oneOf ?? []) places.push(...secretPlaces(member, at, seen));
  if (schema.items) places.push(...secretPlaces(schema.items, [...at, '*'], seen));
  if (typeof schema.additionalProperties === 'object') places.push(...secretPlaces(schema.additionalProperties, [...at, '*'], seen));
  return places;
}
/** Whether the value at `path` (from the settings' root) is a secret: custom models' keys and headers, cloud credentials, MCP servers' headers and env. */
export function isSecretPath(path: Path): boolean {
  return SECRET_PATHS.some((pattern) => pattern.length === path.length && pattern.every((segment, i) => segment === '*' || segment === String(path[i])));
}
export const MASKED = /^\*{4}/;

/** A copy for showing (`path`: where `value` is in the settings): a secret typed here (not the server's `****abcd` mask) is never shown back. */
export function maskSecrets(value: Json, path: Path = []): Json {
  if (Array.isArray(value)) return value.map((item, i) => maskSecrets(item, [...path, i]));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, maskSecrets(item, [...path, key])]));
  if (typeof value === 'string' && isSecretPath(path) && !MASKED.test(value)) return value === '' ? '' : '(new value, not shown)';
  return value;
}
