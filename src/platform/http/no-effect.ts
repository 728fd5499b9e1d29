import type { SchemaObject } from './json-schema';

/**
 * Marks a setting this server accepts and stores but does not act on, with the reason. Published in
 * the OpenAPI document (and so in the console, which labels the field), and the key of the warnings
 * an answer that sets one carries.
 */
export const NO_EFFECT_KEYWORD = 'x-no-effect';

/** A warning on an answer: a setting it was given has no effect on this server. */
export interface SettingWarning {
  code: 'setting_has_no_effect';
  /** The setting, as docs/controls.md names it: dotted, `[]` for the items of a list. */
  field: string;
  message: string;
}

/** The published shape of `warnings` on answers that take settings. */
export const SETTING_WARNINGS_SCHEMA: SchemaObject = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['code', 'field', 'message'],
    properties: {
      code: { type: 'string', enum: ['setting_has_no_effect'] },
      field: { type: 'string', description: 'The setting, dotted, with `[]` for the items of a list (`customModels[].displayName`).' },
      message: { type: 'string', description: 'Why it has no effect here.' },
    },
  },
  description:
    'Not in the spec. Present only when the request set a setting that this server accepts and stores but does not act on (docs/controls.md): ' +
    'one entry per such setting. The change is made all the same.',
};

/**
 * Marks the fields of `reasons` (paths from `root`: dotted, `[]` for array items, through the refs
 * among `definitions`) as having no effect: `x-no-effect` and a sentence at the end of the description.
 * Changes the definitions in place, before they are registered; a path that leads nowhere throws, so
 * a renamed field cannot leave a stale mark.
 */
export function markNoEffect(definitions: Record<string, SchemaObject>, root: string, reasons: Readonly<Record<string, string>>): void {
  for (const [path, reason] of Object.entries(reasons)) {
    const leaf = resolvePath(definitions, definitions[root], path);
    if (!leaf) throw new Error(`markNoEffect: ${root} has no field ${path}`);
    if (leaf[NO_EFFECT_KEYWORD] !== undefined) continue;
    leaf[NO_EFFECT_KEYWORD] = reason;
    leaf.description = `${typeof leaf.description === 'string' ? `${leaf.description} ` : ''}No effect on this server: ${reason}`;
  }
}

function resolvePath(definitions: Record<string, SchemaObject>, schema: SchemaObject | undefined, path: string): SchemaObject | undefined {
  let at = deref(definitions, schema);
  for (const segment of path.split('.')) {
    const name = segment.replace(/\[\]$/, '');
    const properties = at?.properties as Record<string, SchemaObject> | undefined;
    at = deref(definitions, properties?.[name]);
    if (segment.endsWith('[]')) at = deref(definitions, at?.items as SchemaObject | undefined);
  }
  return at;
}

function deref(definitions: Record<string, SchemaObject>, schema: SchemaObject | undefined): SchemaObject | undefined {
  const target = typeof schema?.$ref === 'string' ? schema.$ref.replace('#/components/schemas/', '') : undefined;
  return target ? definitions[target] : schema;
}

/**
 * The warnings for the settings of `reasons` that `given` sets to something: anything but absent, null,
 * false, an empty string, list or object (which ask for nothing). One per setting, in `reasons`' order;
 * `where` says where the settings were given, for the message (`sessionSettings.`).
 */
export function noEffectWarnings(given: unknown, reasons: Readonly<Record<string, string>>, where = ''): SettingWarning[] {
  return Object.entries(reasons)
    .filter(([path]) => valuesAt(given, path.split('.')).some(asksForSomething))
    .map(([path, reason]) => ({ code: 'setting_has_no_effect', field: path, message: `${where}${path} has no effect on this server: ${reason}` }));
}

function valuesAt(value: unknown, segments: string[]): unknown[] {
  if (segments.length === 0) return [value];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const [segment, ...rest] = segments;
  const child = (value as Record<string, unknown>)[segment.replace(/\[\]$/, '')];
  if (!segment.endsWith('[]')) return valuesAt(child, rest);
  return Array.isArray(child) ? child.flatMap((item) => valuesAt(item, rest)) : [];
}

function asksForSomething(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}
