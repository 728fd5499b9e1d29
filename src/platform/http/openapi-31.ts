import { MESSAGE_KEYWORDS } from './json-schema';

/**
 * The document is published as OpenAPI 3.1, whose Schema Object is JSON Schema 2020-12. Our schemas are
 * written once, in the 3.0 flavour that the Ajv validators read (`nullable`, `example`), so that what is
 * validated and what is published cannot drift; this turns a copy of each into its 3.1 form on the way
 * out, with the same meaning Ajv gives it:
 * - `nullable: true` beside `type` adds `"null"` to the type (Ajv's reading: `enum`, if any, still applies);
 *   without `type` (a `$ref`, `allOf`, ...) the schema becomes `anyOf: [schema, {type: "null"}]`;
 * - a schema's `example` becomes `examples: [example]` (`example` is deprecated in 3.1 schemas);
 * - boolean `exclusiveMinimum`/`exclusiveMaximum` (3.0) become the number they qualify;
 * - a `discriminator` without `mapping` gets one, from the one-value `enum` each `oneOf` branch gives its property.
 *   OpenAPI reads a missing mapping as the branches' schema names (`type: "TextBlock"`), Ajv as their enums
 *   (`type: "text"`, what the server accepts and sends), and Ajv refuses a written `mapping`: so it is written here.
 * Nothing else changes; the input is not modified.
 */
type Json = { [key: string]: unknown };

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Keywords whose value is a schema. */
const SCHEMA_KEYWORDS = [
  'additionalProperties',
  'items',
  'not',
  'propertyNames',
  'contains',
  'if',
  'then',
  'else',
  'unevaluatedProperties',
  'unevaluatedItems',
  'additionalItems',
];
/** Keywords whose value is a list of schemas. */
const SCHEMA_LIST_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
/** Keywords whose value maps names to schemas. */
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];

export function toSchema31(schema: unknown): unknown {
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    // What our validator says when a value breaks a rule is not part of the contract.
    if (MESSAGE_KEYWORDS.includes(key)) continue;
    if (SCHEMA_KEYWORDS.includes(key)) out[key] = toSchema31(value);
    else if (SCHEMA_LIST_KEYWORDS.includes(key) && Array.isArray(value)) out[key] = value.map(toSchema31);
    else if (SCHEMA_MAP_KEYWORDS.includes(key) && isObject(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([name, item]) => [name, toSchema31(item)]));
    else out[key] = value;
  }
  if ('example' in out) {
    const example = out.example;
    delete out.example;
    if (!Array.isArray(out.examples)) out.examples = [example];
  }
  for (const [keyword, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof out[keyword] !== 'boolean') continue;
    if (out[keyword] === true && typeof out[bound] === 'number') out[keyword] = out[bound];
    else delete out[keyword];
    if (typeof out[keyword] === 'number') delete out[bound];
  }
  if (!('nullable' in out)) return out;
  const { nullable, ...rest } = out;
  if (nullable !== true) return rest;
  if (rest.type !== undefined) {
    const types = Array.isArray(rest.type) ? (rest.type as string[]) : [rest.type as string];
    return { ...rest, type: types.includes('null') ? types : [...types, 'null'] };
  }
  // No type to widen: either the schema or null. Annotations stay outside, where readers look for them.
  const { description, title, default: fallback, readOnly, writeOnly, deprecated, examples, ...constraint } = rest;
  const annotations = Object.fromEntries(
    Object.entries({ description, title, default: fallback, readOnly, writeOnly, deprecated, examples }).filter(([, value]) => value !== undefined),
  );
  return { ...annotations, anyOf: [constraint, { type: 'null' }] };
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every Schema Object of the document in its 3.1 form (components, parameters, bodies, responses and their headers). */
export function toOpenApi31<T extends object>(document: T): T {
  const doc = structuredClone(document) as Json;
  const components = isObject(doc.components) ? doc.components : undefined;
  if (components && isObject(components.schemas)) {
    components.schemas = Object.fromEntries(Object.entries(components.schemas).map(([name, schema]) => [name, toSchema31(schema)]));
  }
  const withSchema = (holder: unknown) => {
    if (isObject(holder) && 'schema' in holder) holder.schema = toSchema31(holder.schema);
  };
  const content = (owner: unknown) => {
    if (isObject(owner) && isObject(owner.content)) Object.values(owner.content).forEach(withSchema);
  };
  const response = (item: unknown) => {
    content(item);
    if (isObject(item) && isObject(item.headers)) Object.values(item.headers).forEach(withSchema);
  };
  for (const kind of ['parameters', 'headers'] as const) if (components && isObject(components[kind])) Object.values(components[kind]).forEach(withSchema);
  if (components && isObject(components.requestBodies)) Object.values(components.requestBodies).forEach(content);
  if (components && isObject(components.responses)) Object.values(components.responses).forEach(response);
  for (const item of Object.values(isObject(doc.paths) ? doc.paths : {})) {
    if (!isObject(item)) continue;
    if (Array.isArray(item.parameters)) item.parameters.forEach(withSchema);
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      if (Array.isArray(operation.parameters)) operation.parameters.forEach(withSchema);
      content(operation.requestBody);
      if (isObject(operation.responses)) Object.values(operation.responses).forEach(response);
    }
  }
  const schemas = components && isObject(components.schemas) ? components.schemas : {};
  const mapDiscriminators = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(mapDiscriminators);
    if (!isObject(node)) return;
    const mapping = isObject(node.discriminator) && !('mapping' in node.discriminator) ? mappingOf(node.discriminator, node.oneOf, schemas) : undefined;
    if (mapping) node.discriminator = { ...(node.discriminator as Json), mapping };
    Object.values(node).forEach(mapDiscriminators);
  };
  mapDiscriminators(doc.components);
  mapDiscriminators(doc.paths);
  return doc as T;
}

/** Tag value → `$ref`, read from each branch's one-value `enum` for the property; undefined when a branch has none. */
function mappingOf(discriminator: Json, oneOf: unknown, schemas: Json): Record<string, string> | undefined {
  if (typeof discriminator.propertyName !== 'string' || !Array.isArray(oneOf)) return undefined;
  const mapping: Record<string, string> = {};
  for (const branch of oneOf) {
    const $ref = isObject(branch) && typeof branch.$ref === 'string' ? branch.$ref : undefined;
    const target = $ref?.startsWith('#/components/schemas/') ? schemas[$ref.slice('#/components/schemas/'.length)] : undefined;
    const tag = isObject(target) && isObject(target.properties) ? target.properties[discriminator.propertyName] : undefined;
    const values = isObject(tag) && Array.isArray(tag.enum) ? tag.enum : [];
    if (!$ref || values.length !== 1 || typeof values[0] !== 'string') return undefined;
    mapping[values[0]] = $ref;
  }
  return mapping;
}
