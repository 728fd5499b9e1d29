type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * JSON Merge Patch (RFC 7396, section 2): an object patch merges member by member, `null`
 * removes a member, anything else (arrays included) replaces the target whole.
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

/** The `a.b.c` paths a patch sets to `null` (asks to remove). */
export function nulledPaths(patch: unknown, prefix: string): Set<string> {
  const out = new Set<string>();
  if (!isObject(patch)) return out;
  for (const [key, value] of Object.entries(patch)) {
    const path = `${prefix}.${key}`;
    if (value === null) out.add(path);
    else for (const inner of nulledPaths(value, path)) out.add(inner);
  }
  return out;
}

function isObject(value: unknown): value is Record<string, Json> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
