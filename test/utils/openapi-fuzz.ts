import type { OpenApiDocument } from './openapi-oracle';
import { Dice } from './seeded-random';

/**
 * Requests generated from the OpenAPI document for test/e2e/openapi-fuzz.e2e-spec.ts: values that follow an
 * operation's schemas (with real ids where a name says which), then broken in one of the ways hostile clients
 * break them. Every choice comes from one seeded `Dice`, so a seed replays the same requests.
 */

type Json = Record<string, unknown>;
type Schema = Json;

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A value sent as written, not as JSON.stringify would write it (`-0`, `1e309`, duplicate keys). */
export class Raw {
  constructor(readonly text: string) {}
  toJSON(): string {
    return `\u0001${this.text}\u0001`;
  }
}

/** The JSON text of a value, with each `Raw` written as it is. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value).replace(/"\\u0001(.*?)\\u0001"/g, (_, text: string) => JSON.parse(`"${text}"`) as string);
}

/**
 * Values a property or parameter of this name takes when valid: the seeded objects' ids, a loopback URL, short
 * waits. Generated values otherwise (never from the document's examples, some of which name public hosts).
 */
export type Hints = (name: string) => readonly unknown[] | undefined;

const WORDS = ['alpha', 'Build box', 'x', 'hello world', 'é', 'ünïcode', '日本語', 'emoji 😀', 'a-b_c.d', '42'];

/** Candidates for a string with a `pattern`; the first few that match are chosen from. */
const PATTERN_CANDIDATES = ['1', '20', '5', '100', '0', 'a', 'abc', 'alpha', 'session.created', 'message.added', 'x1', 'A', 'ci', 'X-Header'];

export class SchemaSampler {
  constructor(
    private readonly document: OpenApiDocument,
    private readonly dice: Dice,
    private readonly hints: Hints,
  ) {}

  resolve(schema: unknown): Schema {
    let current = schema;
    for (let i = 0; isObject(current) && typeof current.$ref === 'string' && i < 20; i++) {
      const path = current.$ref.replace(/^#\//, '').split('/');
      current = path.reduce<unknown>((node, key) => (isObject(node) ? node[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), this.document);
    }
    return isObject(current) ? current : {};
  }

  /** `allOf` folded into its schema: properties and required merged, patterns collected. */
  private flatten(schema: unknown): Schema & { patterns: string[] } {
    const own = this.resolve(schema);
    const patterns = typeof own.pattern === 'string' ? [own.pattern] : [];
    let merged: Schema = { ...own };
    for (const part of Array.isArray(own.allOf) ? own.allOf : []) {
      const flat = this.flatten(part);
      patterns.push(...flat.patterns);
      merged = {
        ...flat,
        ...merged,
        properties: { ...(flat.properties as Json), ...(merged.properties as Json) },
        required: [...((flat.required as string[]) ?? []), ...((merged.required as string[]) ?? [])],
      };
    }
    delete merged.allOf;
    return { ...merged, patterns };
  }

  /** A value the schema accepts, or close to it (patterns are met where a candidate matches). */
  valid(input: unknown, name = '', depth = 0): unknown {
    const schema = this.flatten(input);
    const hinted = name ? this.hints(name) : undefined;
    if (hinted && this.dice.chance(0.9)) {
      const value = this.dice.pick(hinted);
      return schema.type === 'string' && typeof value === 'number' ? String(value) : value;
    }
    if ('const' in schema) return schema.const;
    if (Array.isArray(schema.enum)) return this.dice.pick(schema.enum);
    const branches = (schema.oneOf ?? schema.anyOf) as unknown[] | undefined;
    if (Array.isArray(branches)) {
      const concrete = branches.filter((branch) => this.resolve(branch).type !== 'null');
      return this.valid(this.dice.pick(concrete.length > 0 && this.dice.chance(0.9) ? concrete : branches), name, depth);
    }
    let type = schema.type as string | string[] | undefined;
    if (Array.isArray(type)) type = type.includes('null') && type.length > 1 && this.dice.chance(0.9) ? type.find((t) => t !== 'null') : this.dice.pick(type);
    type ??= schema.properties ? 'object' : schema.items ? 'array' : 'string';
    switch (type) {
      case 'null':
        return null;
      case 'boolean':
        return this.dice.chance(0.5);
      case 'integer':
      case 'number':
        return this.number(schema, type === 'integer');
      case 'array':
        return this.array(schema, name, depth);
      case 'object':
        return this.object(schema, depth);
      default:
        return this.string(schema, name);
    }
  }

  private number(schema: Schema, integer: boolean): number {
    const min = typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : ((schema.minimum as number | undefined) ?? 0);
    const max = typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - 1 : ((schema.maximum as number | undefined) ?? min + 100);
    const value = this.dice.chance(0.3) ? this.dice.pick([min, max]) : min + this.dice.next() * (max - min);
    return integer ? Math.round(value) : value;
  }

  private array(schema: Schema, name: string, depth: number): unknown[] {
    const min = (schema.minItems as number | undefined) ?? 0;
    const max = Math.min((schema.maxItems as number | undefined) ?? min + 3, min + 3);
    const items = Array.from({ length: depth > 5 ? min : this.dice.int(min, max) }, () => this.valid(schema.items, singular(name), depth + 1));
    return schema.uniqueItems ? [...new Map(items.map((item) => [JSON.stringify(item), item])).values()] : items;
  }

  private object(schema: Schema, depth: number): Json {
    const properties = (schema.properties ?? {}) as Record<string, unknown>;
    const required = new Set((schema.required as string[] | undefined) ?? []);
    const out: Json = {};
    for (const [key, property] of Object.entries(properties)) {
      if (required.has(key) || (depth < 4 && this.dice.chance(0.4))) out[key] = this.valid(property, key, depth + 1);
    }
    if (isObject(schema.additionalProperties) && Object.keys(properties).length === 0 && depth < 4) {
      for (let i = this.dice.int(0, 2); i > 0; i--) out[`k${i}`] = this.valid(schema.additionalProperties, '', depth + 1);
    }
    return out;
  }

  private string(schema: Schema & { patterns: string[] }, name: string): string {
    switch (schema.format) {
      case 'uuid':
      case 'lowercase-uuid':
        return uuidOf(this.dice);
      case 'date':
        return this.dice.pick(['2026-01-01', '2026-02-28', '2025-12-31']);
      case 'date-time':
        // In the future: expiries must be.
        return new Date(Date.UTC(2030, 0, this.dice.int(1, 28))).toISOString();
      case 'email':
        return `fuzz-${this.dice.int(0, 1e6)}@example.test`;
      case 'ip-or-cidr':
        return this.dice.pick(['10.0.0.0/8', '192.0.2.1', '2001:db8::/32']);
      case 'repository-url':
        // A reserved name: stored, never fetched (provisioning is off in the fuzz's app).
        return `https://git.example.test/acme/${name || 'repo'}-${this.dice.int(0, 9)}.git`;
    }
    const minLength = (schema.minLength as number | undefined) ?? 0;
    const maxLength = (schema.maxLength as number | undefined) ?? 64;
    const fits = (value: string) => value.length >= minLength && value.length <= maxLength && schema.patterns.every((p) => new RegExp(p, 'u').test(value));
    const candidates = schema.patterns.length > 0 ? PATTERN_CANDIDATES.filter(fits) : WORDS.filter(fits);
    if (candidates.length > 0 && this.dice.chance(0.8)) return this.dice.pick(candidates);
    return 'w'.repeat(Math.max(minLength, Math.min(maxLength, this.dice.int(1, 12))));
  }
}

const singular = (name: string) => name.replace(/s$/, '');

/** Strings no server should choke on: controls, lone surrogates, markup, injections, escapes. */
export const ODD_STRINGS = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  '\u202e',
  '\ufeff',
  '😀',
  '\r\n',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '%00',
  '../../etc/passwd',
  '${jndi:ldap://x}',
  '{{7*7}}',
  '',
  ' ',
];

/** Numbers at the edges, written raw: JSON.stringify cannot write `-0`, `1e309` or `1.0`. */
const ODD_NUMBERS = ['-0', '1e308', '1e309', '-1e309', '0.5', '-1', '9007199254740993', '1e21', '1.0', '0e0', '"NaN"', '"1"', '"Infinity"'];

/** Keys an object should not be able to be hurt by. */
const ODD_KEYS = ['zzz', '\u0000', '\ud800', '__proto__', 'constructor', 'prototype', '', 'k'.repeat(1000)];

/** Every place in a value, as the path to it. */
function placesOf(value: unknown, path: Array<string | number> = [], out: Array<Array<string | number>> = []) {
  out.push(path);
  if (Array.isArray(value)) value.slice(0, 20).forEach((item, i) => placesOf(item, [...path, i], out));
  else if (isObject(value)) Object.entries(value).forEach(([key, item]) => placesOf(item, [...path, key], out));
  return out;
}

function at(value: unknown, path: Array<string | number>): unknown {
  return path.reduce<unknown>((node, key) => (node as Json)[key], value);
}

/** Sets an own property, even one named `__proto__`. */
function put(target: Json | unknown[], key: string | number, item: unknown): void {
  Object.defineProperty(target, key, { value: item, enumerable: true, writable: true, configurable: true });
}

function nested(depth: number, kind: 'array' | 'object'): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = kind === 'array' ? [value] : { a: value };
  return value;
}

/** One way of breaking a valid value, named for the failure message. */
export function mutate(valid: unknown, dice: Dice): { value: unknown; how: string } {
  const root = { body: structuredClone(valid) } as Json;
  const places = placesOf(root.body).map((path) => ['body', ...path]);
  const place = dice.pick(places);
  const parent = place.length > 1 ? (at(root, place.slice(0, -1)) as Json) : root;
  const key = place[place.length - 1];
  const current = at(root, place);
  const replace = (item: unknown, how: string) => {
    put(parent, key, item);
    return { value: root.body, how: `${how} at ${place.slice(1).join('.') || '(root)'}` };
  };
  const kind = dice.weighted([
    [4, 'wrong type'],
    [3, 'drop key'],
    [3, 'unknown key'],
    [3, 'odd string'],
    [3, 'odd number'],
    [1, 'huge string'],
    [1, 'long array'],
    [1, 'deep nesting'],
  ] as const);
  switch (kind) {
    case 'wrong type':
      return replace(dice.pick([1, 'x', true, null, [], {}, 1.5].filter((item) => typeof item !== typeof current || Array.isArray(current))), kind);
    case 'drop key': {
      const objects = places.filter((path) => isObject(at(root, path)) && Object.keys(at(root, path) as Json).length > 0);
      if (objects.length === 0) return replace(undefined, kind);
      const target = dice.pick(objects);
      const dropped = dice.pick(Object.keys(at(root, target) as Json));
      delete (at(root, target) as Json)[dropped];
      return { value: root.body, how: `drop ${[...target.slice(1), dropped].join('.')}` };
    }
    case 'unknown key': {
      const objects = places.filter((path) => isObject(at(root, path)));
      if (objects.length === 0) return replace({ [dice.pick(ODD_KEYS)]: 1 }, kind);
      const target = dice.pick(objects);
      const name = dice.pick(ODD_KEYS);
      put(at(root, target) as Json, name, dice.pick([1, 'x', { a: 1 }]));
      return { value: root.body, how: `unknown key ${JSON.stringify(name.slice(0, 20))} at ${target.slice(1).join('.') || '(root)'}` };
    }
    case 'odd string': {
      const odd = dice.pick(ODD_STRINGS);
      return replace(typeof current === 'string' && dice.chance(0.5) ? current + odd : odd, `${kind} ${JSON.stringify(odd)}`);
    }
    case 'odd number': {
      const odd = dice.pick(ODD_NUMBERS);
      return replace(new Raw(odd), `${kind} ${odd}`);
    }
    case 'huge string': {
      const length = dice.weighted([
        [6, 100_000],
        [1, 1_100_000],
      ] as const);
      return replace('x'.repeat(length), `${kind} of ${length}`);
    }
    case 'long array':
      return replace(
        Array.from({ length: 10_000 }, () => (current === undefined ? 1 : current)),
        kind,
      );
    case 'deep nesting': {
      const depth = dice.pick([70, 2_000]);
      return replace(nested(depth, dice.pick(['array', 'object'] as const)), `${kind} ${depth}`);
    }
  }
}

/** Bodies that are not a JSON value of the right shape at all. */
export const ODD_BODIES = [
  '',
  '{',
  'null',
  '[]',
  '"x"',
  '42',
  '{"a":1,"a":2}',
  '\ufeff{}',
  ' {} ',
  '{"__proto__":{"admin":true}}',
  '{"a":"\\ud800"}',
  '[' + '['.repeat(5000) + ']'.repeat(5000) + ']',
];

/** A uuid drawn from the dice, so a seed replays it. */
export function uuidOf(dice: Dice): string {
  const hex = Array.from({ length: 32 }, () => dice.int(0, 15).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

/** A path id that is not an id: garbage, NUL, a lone surrogate's bytes, a malformed escape, 8,000 characters. */
export function oddId(dice: Dice): string {
  return dice.pick([
    () => uuidOf(dice),
    () => uuidOf(dice).toUpperCase(),
    () => `${uuidOf(dice)}%20`,
    () => dice.pick(['x', '0', '-1', '1e308', 'null', '__proto__', '%00', 'a%00b', '%ED%A0%80', '%zz', '%', encodeURIComponent('é😀')]),
    () => encodeURIComponent("' OR 1=1 --"),
    () => 'a'.repeat(8_000),
  ])();
}

/** The merge patch that takes the controls from `current` back to `original` (null removes what the fuzz added). */
export function restoring(current: Json, original: Json): Json {
  const patch: Json = {};
  for (const key of Object.keys(current)) if (!(key in original)) patch[key] = null;
  for (const [key, value] of Object.entries(original)) {
    const now = current[key];
    const objects = [value, now].every((v) => v !== null && typeof v === 'object' && !Array.isArray(v));
    patch[key] = objects ? restoring(now as Json, value as Json) : value;
  }
  return patch;
}

/** The start of a body or value, for a failure message. */
export const excerpt = (value: unknown, length = 300) => {
  const text = Buffer.isBuffer(value) ? `<${value.length} bytes>` : typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined ? '(none)' : text.length > length ? `${text.slice(0, length)}… (${text.length})` : text;
};

/** A query value percent-encoded, a lone surrogate as the bytes a careless client would send. */
export function encodeSafely(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return value.replace(/[\ud800-\udfff]/g, '%ED%A0%80').replace(/[^%\w.~-]/g, (c) => encodeURIComponent(c));
  }
}

/** An operation of the document, as the fuzz sends it. */
export interface Operation {
  key: string;
  method: string;
  template: string;
  parameters: Array<{ name: string; in: string; required?: boolean; schema?: unknown }>;
  body?: unknown;
  statuses: string[];
}

/** Every operation of the document. */
export const operationsOf = (document: OpenApiDocument): Operation[] =>
  Object.entries(document.paths)
    .flatMap(([template, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'post', 'patch', 'put', 'delete'].includes(method))
        .map(([method, value]) => {
          const op = value as { parameters?: Operation['parameters']; requestBody?: { content: Record<string, { schema: unknown }> }; responses: Json };
          return {
            key: `${method} ${template}`,
            method,
            template,
            parameters: op.parameters ?? [],
            body: op.requestBody?.content['application/json']?.schema,
            statuses: Object.keys(op.responses),
          };
        }),
    )
    // Deletions last, so the objects they remove were there for every other operation; a computer's last of all,
    // as its agent token is the agent channel's credential.
    .sort((a, b) => deletionRank(a) - deletionRank(b));

const deletionRank = (op: Operation) => (op.method !== 'delete' ? 0 : op.template === '/api/v0/computers/{computerId}' ? 2 : 1);
