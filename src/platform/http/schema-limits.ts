import type { SchemaObject } from './json-schema';
import { MAX_REPORTED_ERRORS, ProblemList } from './validation';

type Resolve = (name: string) => SchemaObject | undefined;

/**
 * The counts a schema allows, checked before anything walks the items they count: an array longer than its
 * `maxItems`, an object with more properties than its `maxProperties`, or a closed object with more unknown keys than
 * a 400 lists. A container over its limit is reported and not entered, so what an oversized body costs is bounded by
 * its bytes, not by what it holds. Only branches a value must satisfy are followed (a discriminator's, or the one
 * branch of a `oneOf`/`anyOf` whose type fits), so nothing reported here is a problem the full validation would not
 * find too.
 */
export function countProblems(schema: SchemaObject, value: unknown, resolve: Resolve, problems: ProblemList, path = ''): void {
  // As in OpenAPI 3.0, a $ref stands for its whole schema.
  if (typeof schema.$ref === 'string') {
    const target = resolve(schema.$ref.split('/').pop()!);
    if (target) countProblems(target, value, resolve, problems, path);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const branch of (schema.allOf as SchemaObject[] | undefined) ?? []) countProblems(branch, value, resolve, problems, path);
  const branch = requiredBranch(schema, value, resolve);
  if (branch) countProblems(branch, value, resolve, problems, path);
  if (Array.isArray(value)) {
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) {
      problems.add(path || 'body', `must NOT have more than ${schema.maxItems} items`);
      return;
    }
    const items = schema.items as SchemaObject | undefined;
    if (items && typeof items === 'object') value.forEach((item, i) => countProblems(items, item, resolve, problems, `${path}[${i}]`));
    return;
  }
  const keys = Object.keys(value);
  if (typeof schema.maxProperties === 'number' && keys.length > schema.maxProperties) {
    problems.add(path || 'body', `must NOT have more than ${schema.maxProperties} properties`);
    return;
  }
  const properties = (schema.properties ?? {}) as Record<string, SchemaObject>;
  const child = (key: string) => (path ? `${path}.${key}` : key);
  if (schema.additionalProperties === false && schema.patternProperties === undefined) {
    let unknown = 0;
    const listed: string[] = [];
    for (const key of keys) if (!Object.hasOwn(properties, key) && unknown++ < MAX_REPORTED_ERRORS) listed.push(key);
    // A few unknown keys are left to the full validation, which names them beside every other problem.
    if (unknown > MAX_REPORTED_ERRORS) {
      for (const key of listed) problems.add(child(key), 'is not an accepted field');
      problems.counted(unknown - listed.length);
      return;
    }
  }
  const additional = schema.additionalProperties;
  for (const key of keys) {
    const property = Object.hasOwn(properties, key)
      ? properties[key]
      : typeof additional === 'object' && additional !== null
        ? (additional as SchemaObject)
        : undefined;
    if (property) countProblems(property, (value as Record<string, unknown>)[key], resolve, problems, child(key));
  }
}

/** The branch of a `oneOf`/`anyOf` the value must satisfy, when one is certain. */
function requiredBranch(schema: SchemaObject, value: object, resolve: Resolve): SchemaObject | undefined {
  const branches = (schema.oneOf ?? schema.anyOf) as SchemaObject[] | undefined;
  if (!branches) return undefined;
  const resolved = branches.map((branch) => (typeof branch.$ref === 'string' ? resolve(branch.$ref.split('/').pop()!) : branch));
  const discriminator = (schema.discriminator as { propertyName?: string } | undefined)?.propertyName;
  if (discriminator) {
    const tag = (value as Record<string, unknown>)[discriminator];
    return resolved.find((branch) => {
      const property = (branch?.properties as Record<string, SchemaObject> | undefined)?.[discriminator];
      return property !== undefined && ((property.enum as unknown[] | undefined)?.includes(tag) || property.const === tag);
    });
  }
  const kind = Array.isArray(value) ? 'array' : 'object';
  const fitting = resolved.filter((branch) => branch !== undefined && typeFits(branch, kind));
  return fitting.length === 1 ? fitting[0] : undefined;
}

/** Whether a schema can accept an array or an object; a schema that names no type may. */
function typeFits(schema: SchemaObject, kind: 'array' | 'object'): boolean {
  const type = schema.type;
  if (type === undefined) return schema.items !== undefined ? kind === 'array' : schema.properties !== undefined ? kind === 'object' : true;
  return Array.isArray(type) ? type.includes(kind) : type === kind;
}
