import { PipeTransform, Query } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import { isIP } from 'node:net';
import { isUuid } from '../database/ids';
import type { SchemaName } from './api-schema';
import { NO_EFFECT_KEYWORD } from './no-effect';
import { countProblems } from './schema-limits';
import { URL_FORMATS, UrlFormat } from '../../contract/urls';
import { checkQueryKeys, FieldError, ProblemList } from './validation';

/** A pattern for one-line text: no C0 or C1 control characters (nor DEL). Linear to check, whatever the input. */
export const NO_CONTROL_CHARACTERS = '^[^\\u0000-\\u001f\\u007f-\\u009f]*$';

/** An address with one `@`, no spaces, and a dot in the domain: what mail systems accept, roughly. */
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;

/** The `email` format, for the command line too: one rule for an address wherever it is given. */
export function isEmailAddress(value: string): boolean {
  return value.length <= 254 && EMAIL.test(value);
}

/** An IPv4 or IPv6 address, or a CIDR block of either (`10.0.0.0/8`, `2001:db8::/32`). */
export function isIpOrCidr(value: string): boolean {
  const [address, prefix, extra] = value.split('/');
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}

/**
 * A JSON Schema in OpenAPI 3.0's dialect, with two extensions of ours that shape error messages:
 * `x-problem` (what a value that breaks its pattern, format, length, enum or `not` is told, instead of the
 * rule itself) and `x-required` (what a missing property is told after "is required: ").
 */
export type SchemaObject = { [keyword: string]: unknown };

/** The keywords that shape our error messages; the published document leaves them out. */
export const MESSAGE_KEYWORDS = ['x-problem', 'x-required'];

/**
 * Marks a value that is a secret: stored encrypted, answered masked (`****` and the last four
 * characters), and kept when its mask is sent back. Published, so that clients (the console) know
 * which fields to treat so without a list of their own.
 */
export const SECRET_KEYWORD = 'x-secret';

/**
 * Every request body and query string is a closed JSON Schema, validated with Ajv against the same
 * schemas the OpenAPI document publishes, so the docs and the checks cannot drift. Schemas are
 * OpenAPI 3.0 flavoured: `nullable`, `discriminator`, single-value `enum` for tags, refs as
 * `#/components/schemas/<Name>`.
 */
export class SchemaRegistry {
  /** Every registry, so the OpenAPI document can publish all their schemas. */
  static readonly all: SchemaRegistry[] = [];

  /** Stops at the first problem: what every request pays, and all a valid one needs. */
  private readonly ajv = newAjv(false);
  /** Finds every problem, for the 400 of a body whose counts are within their limits (countProblems). */
  private readonly ajvAll = newAjv(true);
  private readonly schemas: Record<string, SchemaObject> = {};
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly compiledAll = new Map<string, ValidateFunction>();
  private sealed = false;

  private readonly urlFormats: Record<string, UrlFormat>;

  /** `urlFormats`: the module's own URL formats, beside the shared ones (`uri`, `http-base-url`). */
  constructor(
    private readonly documentId: string,
    urlFormats: Record<string, UrlFormat> = {},
  ) {
    this.urlFormats = { ...URL_FORMATS, ...urlFormats };
    for (const ajv of [this.ajv, this.ajvAll]) this.addKeywordsAndFormats(ajv);
    SchemaRegistry.all.push(this);
  }

  private addKeywordsAndFormats(ajv: Ajv): void {
    ajv.addVocabulary(['example', 'components', SECRET_KEYWORD, NO_EFFECT_KEYWORD, ...MESSAGE_KEYWORDS]);
    ajv.addFormat('uuid', isUuid);
    for (const [name, format] of Object.entries(this.urlFormats)) ajv.addFormat(name, (value: string) => format.problem(value) === undefined);
    ajv.addFormat(
      'date-time',
      (value: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value)),
    );
    // The shape only: whether it is a real day is the caller's to say (February 30 has the shape).
    ajv.addFormat('date', /^\d{4}-\d{2}-\d{2}$/);
    ajv.addFormat('lowercase-uuid', (value: string) => isUuid(value) && value === value.toLowerCase());
    ajv.addFormat('email', isEmailAddress);
    ajv.addFormat('ip-or-cidr', isIpOrCidr);
  }

  /** Adds named component schemas; all must be added before the first `validator()`. */
  add(schemas: Record<string, SchemaObject>): this {
    if (this.sealed) throw new Error('SchemaRegistry: add schemas before compiling validators');
    Object.assign(this.schemas, schemas);
    return this;
  }

  /** The schemas to merge into the OpenAPI document's `components.schemas`. */
  components(): Record<string, SchemaObject> {
    return this.schemas;
  }

  /** Compiles every schema now (validators otherwise compile on first use, which keeps them off the start). */
  compileAll(): void {
    for (const name of Object.keys(this.schemas)) this.validator(name);
  }

  /** The schemas a route's `pipe` or `queryPipe` checks requests against, compiled by a test instead of at start. */
  readonly piped = new Set<string>();

  validator(name: string): ValidateFunction {
    return this.compile(this.ajv, this.compiled, name);
  }

  private compile(ajv: Ajv, compiled: Map<string, ValidateFunction>, name: string): ValidateFunction {
    if (!this.sealed) {
      for (const each of [this.ajv, this.ajvAll]) each.addSchema({ $id: this.documentId, components: { schemas: this.schemas } });
      this.sealed = true;
    }
    let validate = compiled.get(name);
    if (!validate) {
      validate = ajv.compile({ $ref: `${this.documentId}#/components/schemas/${name}` });
      compiled.set(name, validate);
    }
    return validate;
  }

  /** A pipe for `@Body(...)` that answers 400 naming every offending field. */
  pipe(name: string): PipeTransform {
    this.piped.add(name);
    return { transform: (value: unknown) => this.check(name, value) };
  }

  /**
   * A pipe for `@Query()`: the keys first (an unknown or repeated one is a 400 naming it, before
   * anything reads the object), then the values, as bodies are checked. Query values are strings.
   */
  queryPipe(name: string): PipeTransform {
    this.piped.add(name);
    return {
      transform: (value: unknown) => {
        const query = value ?? {};
        checkQueryKeys(query, Object.keys(this.propertiesOf(name)));
        return this.check(name, { ...query });
      },
    };
  }

  /** The properties of a named object schema, as OpenAPI lists a query's parameters. */
  propertiesOf(name: string): Record<string, SchemaObject> {
    const schema = this.schemas[name];
    if (!schema) throw new Error(`SchemaRegistry ${this.documentId}: no schema named ${name}`);
    return (schema.properties ?? {}) as Record<string, SchemaObject>;
  }

  check<T>(name: string, value: unknown): T {
    this.problems(name, value).throwIfAny();
    return value as T;
  }

  /**
   * How the value breaks the schema (or holds strings PostgreSQL cannot store): none when valid. What it costs is
   * bounded by the value's size whatever it holds: counts over their limits are found before anything walks what they
   * count, and the list keeps the first problems (MAX_REPORTED_ERRORS).
   */
  problems(name: string, value: unknown): ProblemList {
    const problems = new ProblemList();
    // Nesting was bounded when the body was parsed (JSON_MAX_DEPTH), so the walks below recurse only so deep.
    if (this.validator(name)(value)) {
      unstorableStrings(value, problems);
    } else if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      problems.add('body', 'must be a JSON object');
    } else {
      countProblems({ $ref: name }, value, (schema) => this.schemas[schema], problems);
      if (problems.total === 0) {
        const validate = this.compile(this.ajvAll, this.compiledAll, name);
        validate(value);
        for (const { field, message } of toFieldErrors(validate.errors ?? [], value, (schema) => this.schemas[schema], this.urlFormats))
          problems.add(field, message);
      }
    }
    return problems;
  }
}

function newAjv(allErrors: boolean): Ajv {
  return new Ajv({ allErrors, verbose: true, discriminator: true, allowUnionTypes: true, strict: true, coerceTypes: false, useDefaults: false });
}

// eslint-disable-next-line no-control-regex -- finding NUL is the point
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether text holds what PostgreSQL cannot store or compare: a NUL character or an unpaired surrogate. */
export function isUnstorable(text: string): boolean {
  return UNSTORABLE.test(text);
}

/**
 * Strings PostgreSQL cannot store in text or jsonb: NUL characters and unpaired UTF-16 surrogates.
 * Refused with the field's path rather than failing in the database.
 */
export function unstorableStrings(value: unknown, problems: ProblemList, path = ''): void {
  const message = 'must not contain NUL characters (\\u0000) or unpaired surrogates; escape binary data (e.g. base64)';
  if (typeof value === 'string') {
    if (isUnstorable(value)) problems.add(path || 'body', message);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => unstorableStrings(item, problems, `${path}[${i}]`));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const field = path ? `${path}.${key}` : key;
      if (isUnstorable(key)) problems.add(field, message);
      else unstorableStrings(item, problems, field);
    }
  }
}

/** For bodies whose fields are all optional: no body at all counts as `{}`. */
export class DefaultBody implements PipeTransform {
  constructor(private readonly fallback: Record<string, unknown>) {}

  transform(value: unknown): unknown {
    return value === undefined ? { ...this.fallback } : value;
  }
}

/**
 * `@Query()` for a route whose query string is the named schema: validated by the registry like a
 * body, and each property published as a query parameter of the operation.
 */
export function QuerySchema(registry: SchemaRegistry, name: string): ParameterDecorator {
  return (target, key, index) => {
    Query(registry.queryPipe(name))(target, key, index);
    const method = key === undefined ? undefined : Object.getOwnPropertyDescriptor(target, key);
    if (!method) return;
    const required = new Set((registry.components()[name]?.required as string[] | undefined) ?? []);
    for (const [parameter, schema] of Object.entries(registry.propertiesOf(name))) {
      const { description, example, ...rest } = schema;
      ApiQuery({
        name: parameter,
        required: required.has(parameter),
        schema: rest,
        ...(description ? { description: String(description) } : {}),
        ...(example !== undefined ? { example } : {}),
      })(target, key!, method);
    }
  };
}

/**
 * A name people read in lists (a key's, a member's, an organization's): a string of one line, not
 * blank, at most `maxLength` characters. `what` and `example` make the message when it is missing.
 */
export function displayName(what: string, maxLength: number, example?: string): SchemaObject {
  return {
    type: 'string',
    maxLength,
    allOf: [{ pattern: NO_CONTROL_CHARACTERS }, { pattern: '\\S' }],
    'x-required': `${what}, 1 to ${maxLength} characters${example ? ` (e.g. "${example}")` : ''}`,
    ...(example ? { example } : {}),
  };
}

/** An answer's shape: every property is always there, except the `optional` ones. */
export function answerObject(properties: Record<string, SchemaObject>, optional: string[] = [], description?: string): SchemaObject {
  return {
    type: 'object',
    required: Object.keys(properties).filter((name) => !optional.includes(name)),
    properties,
    ...(description ? { description } : {}),
  };
}

/** An object schema that accepts no property it does not name. */
export function closedObject(required: string[], properties: Record<string, SchemaObject>, description?: string): SchemaObject {
  return { type: 'object', additionalProperties: false, required, properties, ...(description ? { description } : {}) };
}

/** A UUID string, saying what it names when given. */
export function uuidString(description?: string): SchemaObject {
  return { type: 'string', format: 'uuid', ...(description ? { description } : {}) };
}

/** A time as Unix milliseconds in an answer; `nullable` when it may not have happened yet. */
export function unixMs(description = 'Unix ms.', nullable = false): SchemaObject {
  return { type: 'number', description, ...(nullable ? { nullable: true } : {}) };
}

export function ref(name: SchemaName): { $ref: string } {
  return { $ref: `#/components/schemas/${name}` };
}

/** Ajv's errors as `{field, message}` with `a.b[2].c` paths, most specific first, without duplicates. */
type Resolve = (name: string) => SchemaObject | undefined;

export function toFieldErrors(
  errors: ErrorObject[],
  body: unknown,
  resolve: Resolve = () => undefined,
  urlFormats: Record<string, UrlFormat> = URL_FORMATS,
): FieldError[] {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    return [{ field: 'body', message: 'must be a JSON object' }];
  }
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of errors) {
    // Ajv adds a summary ("property name must be valid", 'must match "then" schema') after the error that says why.
    if (error.keyword === 'propertyNames' || error.keyword === 'if') continue;
    const { field, message } = describe(error, resolve, urlFormats);
    const key = `${field}\u0000${message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push({ field, message });
    }
  }
  return out;
}

function describe(error: ErrorObject, resolve: Resolve, urlFormats: Record<string, UrlFormat>): FieldError {
  if (error.propertyName !== undefined) {
    // A map's key broke the rule: name the key, and say the rule is about keys.
    const { message } = describe({ ...error, propertyName: undefined }, resolve, urlFormats);
    const parent = pathOf(error.instancePath);
    return { field: parent ? `${parent}.${error.propertyName}` : error.propertyName, message: `is not an accepted key: it ${message}` };
  }
  const path = pathOf(error.instancePath);
  const child = (name: string) => (path ? `${path}.${name}` : name);
  const params = error.params as Record<string, unknown>;
  const problem = (error.parentSchema as SchemaObject | undefined)?.['x-problem'];
  if (typeof problem === 'string' && ['pattern', 'format', 'maxLength', 'minLength', 'enum', 'not'].includes(error.keyword))
    return { field: path, message: problem };
  switch (error.keyword) {
    case 'required': {
      const missing = String(params.missingProperty);
      const properties = (error.parentSchema as { properties?: Record<string, SchemaObject> } | undefined)?.properties;
      const hint = properties?.[missing]?.['x-required'];
      return { field: child(missing), message: typeof hint === 'string' ? `is required: ${hint}` : 'is required' };
    }
    case 'additionalProperties':
      return { field: child(String(params.additionalProperty)), message: 'is not an accepted field' };
    case 'enum':
      return { field: path, message: `must be one of: ${(params.allowedValues as unknown[]).map(String).join(', ')}` };
    case 'pattern':
      if (params.pattern === '\\S') return { field: path, message: 'must not be blank' };
      if (params.pattern === NO_CONTROL_CHARACTERS) return { field: path, message: 'must be one line without control characters' };
      return { field: path, message: `must match ${String(params.pattern)}` };
    case 'maxLength':
      return { field: path, message: `must be shorter than or equal to ${String(params.limit)} characters` };
    case 'minLength':
      return { field: path, message: `must be longer than or equal to ${String(params.limit)} characters` };
    case 'const':
      return { field: path, message: `must be ${JSON.stringify(params.allowedValue)}` };
    case 'type': {
      // null for a property that says what it needs is as good as missing.
      const hint = (error.parentSchema as SchemaObject | undefined)?.['x-required'];
      if (error.data === null && typeof hint === 'string') return { field: path, message: `is required: ${hint}` };
      return { field: path || 'body', message: `must be ${article(String(params.type))}` };
    }
    case 'format': {
      // A URL format says which of its rules the value breaks (Ajv's verbose errors carry the value).
      const url = urlFormats[String(params.format)];
      const problem = url && typeof error.data === 'string' ? url.problem(error.data) : undefined;
      if (url) return { field: path, message: problem ? `must be ${url.name}: it ${problem}` : `must be ${url.name}` };
      return { field: path, message: `must be ${FORMAT_NAMES[String(params.format)] ?? `a valid ${String(params.format)}`}` };
    }
    case 'discriminator':
      return params.error === 'mapping'
        ? { field: child(String(params.tag)), message: `is not a known ${String(params.tag)}${mappingHint(error, resolve)}` }
        : { field: child(String(params.tag)), message: 'is required and must be a string' };
    default:
      return { field: path || 'body', message: error.message ?? 'is invalid' };
  }
}

type Branch = { $ref?: string; properties?: Record<string, { enum?: unknown[] }> };

function mappingHint(error: ErrorObject, resolve: Resolve): string {
  const oneOf = (error.parentSchema as { oneOf?: Branch[] } | undefined)?.oneOf ?? [];
  const tag = String((error.params as { tag: string }).tag);
  const branches = oneOf.map((branch) => (branch.$ref ? (resolve(branch.$ref.split('/').pop()!) as Branch | undefined) : branch));
  const values = branches.flatMap((branch) => branch?.properties?.[tag]?.enum ?? []);
  return values.length > 0 ? `; must be one of: ${values.map(String).join(', ')}` : '';
}

function pathOf(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, segment) => (/^\d+$/.test(segment) ? `${path}[${segment}]` : path ? `${path}.${segment}` : segment), '');
}

const FORMAT_NAMES: Record<string, string> = {
  uuid: 'a UUID',
  'lowercase-uuid': 'an id as the API writes it (a lower-case UUID)',
  email: 'an email address',
  'ip-or-cidr': 'an IP address or a CIDR block (e.g. 10.0.0.0/8)',
};

function article(type: string): string {
  const types = type.split(',');
  const named = types.map((t) => (t === 'array' || t === 'object' || t === 'integer' ? `an ${t}` : `a ${t}`));
  return named.join(' or ');
}
