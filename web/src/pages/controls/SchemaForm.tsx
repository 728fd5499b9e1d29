import { useState, type ReactNode } from 'react';
import { resolveSchema, type JsonSchema } from '../../api/json-schema';
import { humanize, isObject, isSecretPath as isSecret, MASKED, pathName, type Json, type JsonObject, type Path } from './settings-model';

/**
 * A form drawn from a JSON Schema (the server's own, from its OpenAPI document): one control per field, its description
 * beside it, the server's validation errors at the field they name. Booleans are checkboxes, enums selects, numbers
 * number inputs, lists of text one entry a line, lists of objects repeated groups, maps key → value rows, objects
 * without a known shape JSON, one of several shapes (`oneOf` with a `discriminator`: an MCP server's `transport`) a
 * select of the shapes and the chosen one's fields. Secrets (custom models' keys and headers, MCP servers' headers and
 * env) are never shown: the stored value stays masked and can only be replaced.
 */
export interface FormContext {
  schemas: Record<string, JsonSchema>;
  /** The server's problems by the field it names (`settings.a.b[2]`). */
  errors: ReadonlyMap<string, string[]>;
  onChange: (path: Path, next: Json | undefined) => void;
}

/** The element id of a field, from the path the API names it by. */
export function fieldId(path: Path): string {
  return `ctl-${pathName(path).replace(/[^A-Za-z0-9]/g, (c) => `_${c.charCodeAt(0).toString(16)}`)}`;
}

/** What an empty new value of a schema is: required members filled, lists and maps empty. */
export function emptyOf(schema: JsonSchema, schemas: Record<string, JsonSchema>): Json {
  const s = resolveSchema(schema, schemas);
  const variants = variantsOf(s, schemas);
  if (variants.length > 0) return emptyOf(variants[0].schema, schemas);
  switch (s.type) {
    case 'boolean':
      return false;
    case 'integer':
    case 'number':
      return s.minimum ?? 0;
    case 'string':
      return s.enum ? String(s.enum[0]) : '';
    case 'array':
      return [];
    default:
      return Object.fromEntries((s.required ?? []).map((key) => [key, emptyOf(s.properties?.[key] ?? {}, schemas)]));
  }
}

function errorsAt(ctx: FormContext, path: Path, deep: boolean): string[] {
  const name = pathName(path);
  const found: string[] = [];
  for (const [field, messages] of ctx.errors) {
    if (field === name) found.push(...messages);
    else if (deep && (field.startsWith(`${name}.`) || field.startsWith(`${name}[`)))
      found.push(...messages.map((message) => `${field.slice(name.length).replace(/^\./, '')}: ${message}`));
  }
  return found;
}

function FieldErrors({ id, messages }: { id: string; messages: string[] }) {
  if (messages.length === 0) return null;
  return (
    <ul className="field-errors" id={id}>
      {messages.map((message) => (
        <li key={message}>{message}</li>
      ))}
    </ul>
  );
}

/** The label, description and errors around one control. */
function Labelled(props: {
  path: Path;
  label: string;
  description?: string;
  errors: string[];
  children: (describedBy: string | undefined) => ReactNode;
  inline?: boolean;
}) {
  const id = fieldId(props.path);
  const described = [props.description ? `${id}-help` : '', props.errors.length > 0 ? `${id}-errors` : ''].filter(Boolean).join(' ') || undefined;
  const name = props.path[props.path.length - 1];
  return (
    <div className={`field schema-field${props.inline ? ' schema-field-inline' : ''}${props.errors.length > 0 ? ' has-error' : ''}`}>
      {props.inline ? (
        <label htmlFor={id} className="checkbox-label">
          {props.children(described)} {props.label}
        </label>
      ) : (
        <label htmlFor={id}>{props.label}</label>
      )}
      {typeof name === 'string' ? <code className="field-key">{name}</code> : null}
      {props.inline ? null : props.children(described)}
      {props.description ? (
        <p className="hint" id={`${id}-help`}>
          {props.description}
        </p>
      ) : null}
      <FieldErrors id={`${id}-errors`} messages={props.errors} />
    </div>
  );
}

type SchemaFieldProps = { ctx: FormContext; schema: JsonSchema; path: Path; value: Json | undefined; label?: string; required?: boolean };

/** One field of the form; a setting the server does not act on is marked so, with the reason (its `x-no-effect`). */
export function SchemaField(props: SchemaFieldProps) {
  const reason = resolveSchema(props.schema, props.ctx.schemas)['x-no-effect'];
  if (reason === undefined) return <FieldControl {...props} />;
  return (
    <div className="no-effect-field">
      <span className="no-effect-badge" title={reason}>
        No effect on this server
      </span>
      <FieldControl {...props} />
    </div>
  );
}

function FieldControl(props: SchemaFieldProps) {
  const { ctx, path, value } = props;
  const schema = resolveSchema(props.schema, ctx.schemas);
  const key = path[path.length - 1];
  const label = props.label ?? (typeof key === 'number' ? `Entry ${key + 1}` : humanize(String(key)));
  const id = fieldId(path);
  const set = (next: Json | undefined) => ctx.onChange(path, next);

  if (isSecret(path) && schema.type === 'string' && (value === undefined || typeof value === 'string'))
    return <SecretField {...props} label={label} description={schema.description} />;
  const variants = variantsOf(schema, ctx.schemas);
  if (variants.length > 0) return <VariantField {...props} label={label} schema={schema} variants={variants} />;

  switch (schema.type) {
    case 'boolean':
      return (
        <Labelled path={path} label={label} description={schema.description} errors={errorsAt(ctx, path, false)} inline>
          {(describedBy) => (
            <input id={id} type="checkbox" checked={value === true} onChange={(event) => set(event.target.checked)} aria-describedby={describedBy} />
          )}
        </Labelled>
      );
    case 'integer':
    case 'number':
      return (
        <Labelled path={path} label={label} description={describeRange(schema, props.required)} errors={errorsAt(ctx, path, false)}>
          {(describedBy) => (
            <input
              id={id}
              type="number"
              inputMode="numeric"
              min={schema.minimum}
              max={schema.maximum}
              value={typeof value === 'number' ? value : ''}
              onChange={(event) => set(event.target.value === '' ? undefined : Number(event.target.value))}
              aria-describedby={describedBy}
              aria-invalid={errorsAt(ctx, path, false).length > 0 || undefined}
            />
          )}
        </Labelled>
      );
    case 'string':
      if (schema.enum) {
        return (
          <Labelled path={path} label={label} description={schema.description} errors={errorsAt(ctx, path, false)}>
            {(describedBy) => (
              <select
                id={id}
                value={typeof value === 'string' ? value : ''}
                onChange={(event) => set(event.target.value === '' ? undefined : event.target.value)}
                aria-describedby={describedBy}
              >
                {props.required ? null : <option value="">(not set)</option>}
                {schema.enum!.map((option) => (
                  <option key={String(option)} value={String(option)}>
                    {String(option)}
                  </option>
                ))}
              </select>
            )}
          </Labelled>
        );
      }
      return (
        <Labelled path={path} label={label} description={schema.description} errors={errorsAt(ctx, path, false)}>
          {(describedBy) =>
            (schema.maxLength ?? 0) > 2048 ? (
              <textarea
                id={id}
                rows={4}
                value={typeof value === 'string' ? value : ''}
                onChange={(event) => set(event.target.value)}
                aria-describedby={describedBy}
              />
            ) : (
              <input
                id={id}
                type="text"
                value={typeof value === 'string' ? value : ''}
                // An optional field left empty is absent (removed by the change); a required one is sent empty, and the server says why not.
                onChange={(event) => set(event.target.value === '' && !props.required ? undefined : event.target.value)}
                aria-describedby={describedBy}
                aria-invalid={errorsAt(ctx, path, false).length > 0 || undefined}
                spellCheck={false}
              />
            )
          }
        </Labelled>
      );
    case 'array': {
      const items = resolveSchema(schema.items ?? {}, ctx.schemas);
      if (items.type === 'string' && !items.enum) return <LinesField {...props} label={label} description={schema.description} />;
      return <ListField {...props} label={label} description={schema.description} itemSchema={schema.items ?? {}} />;
    }
    case 'object':
      if (schema.properties) return <ObjectField {...props} label={label} schema={schema} />;
      if (isObject(schema.additionalProperties)) return <MapField {...props} label={label} schema={schema} />;
      return <JsonField {...props} label={label} description={schema.description} />;
    default:
      return <JsonField {...props} label={label} description={schema.description} />;
  }
}

function describeRange(schema: JsonSchema, required?: boolean): string | undefined {
  const range = schema.minimum !== undefined && schema.maximum !== undefined ? `${schema.minimum}-${schema.maximum}.` : '';
  const optional = required ? '' : ' Leave empty for none.';
  return [schema.description, range, optional].filter(Boolean).join(' ').trim() || undefined;
}

/**
 * A list of text, one entry a line (empty lines dropped). An optional list that is absent says so, with "Set …": absent
 * and empty may differ (an MCP server's `allowedTools`: absent is all of them, empty none).
 */
function LinesField(props: { ctx: FormContext; path: Path; value: Json | undefined; label: string; description?: string; required?: boolean }) {
  const id = fieldId(props.path);
  const current = Array.isArray(props.value) ? props.value.map(String) : [];
  // The text as typed (a trailing new line included) while it means the same list.
  const [text, setText] = useState(current.join('\n'));
  /** Set just now with "Set …": the focus goes to the new text box. */
  const [justSet, setJustSet] = useState(false);
  const shown = linesOf(text).join('\n') === current.join('\n') ? text : current.join('\n');
  const errors = errorsAt(props.ctx, props.path, true);
  const optional = !props.required && typeof props.path[props.path.length - 1] === 'string';
  if (optional && props.value === undefined) {
    return (
      <div className="field schema-field">
        <p className="schema-absent" id={id}>
          <strong>{props.label}</strong> <code className="field-key">{String(props.path[props.path.length - 1])}</code>: not set.{' '}
          <button
            type="button"
            className="small"
            onClick={() => {
              setText('');
              setJustSet(true);
              props.ctx.onChange(props.path, []);
            }}
          >
            Set {props.label.toLowerCase()}
          </button>
        </p>
        {props.description ? <p className="hint">{props.description}</p> : null}
        <FieldErrors id={`${id}-errors`} messages={errors} />
      </div>
    );
  }
  return (
    <Labelled path={props.path} label={props.label} description={`${props.description ?? ''} One entry a line.`.trim()} errors={errors}>
      {(describedBy) => (
        <>
          <textarea
            id={id}
            rows={Math.min(8, Math.max(2, current.length + 1))}
            value={shown}
            spellCheck={false}
            onChange={(event) => {
              setText(event.target.value);
              props.ctx.onChange(props.path, linesOf(event.target.value));
            }}
            aria-describedby={describedBy}
            aria-invalid={errors.length > 0 || undefined}
            ref={(element) => {
              if (element && justSet) {
                element.focus();
                setJustSet(false);
              }
            }}
          />
          {optional ? (
            <button type="button" className="small" onClick={() => props.ctx.onChange(props.path, undefined)}>
              Remove {props.label.toLowerCase()}
            </button>
          ) : null}
        </>
      )}
    </Labelled>
  );
}
const linesOf = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

/** Any JSON (objects whose members the schema leaves open, e.g. a custom model's `extraArgs`). */
function JsonField(props: { ctx: FormContext; path: Path; value: Json | undefined; label: string; description?: string }) {
  const id = fieldId(props.path);
  const [text, setText] = useState(props.value === undefined ? '' : JSON.stringify(props.value, null, 2));
  const [problem, setProblem] = useState<string | null>(null);
  const errors = [...(problem ? [problem] : []), ...errorsAt(props.ctx, props.path, true)];
  return (
    <Labelled path={props.path} label={props.label} description={`${props.description ?? ''} JSON.`.trim()} errors={errors}>
      {(describedBy) => (
        <textarea
          id={id}
          rows={3}
          className="code-input"
          value={text}
          spellCheck={false}
          onChange={(event) => {
            setText(event.target.value);
            if (event.target.value.trim() === '') {
              setProblem(null);
              props.ctx.onChange(props.path, undefined);
              return;
            }
            try {
              props.ctx.onChange(props.path, JSON.parse(event.target.value) as Json);
              setProblem(null);
            } catch {
              setProblem('is not valid JSON yet (it is not sent until it is)');
            }
          }}
          aria-describedby={describedBy}
          aria-invalid={errors.length > 0 || undefined}
        />
      )}
    </Labelled>
  );
}

/** A secret the server answers masked (`****abcd`): shown only as that mask; replacing it takes a new value, never shown back. */
function SecretField(props: { ctx: FormContext; path: Path; value: Json | undefined; label: string; description?: string }) {
  const id = fieldId(props.path);
  const stored = typeof props.value === 'string' && MASKED.test(props.value) ? props.value : null;
  const [original] = useState(stored);
  const replacing = !stored;
  const errors = errorsAt(props.ctx, props.path, false);
  return (
    <Labelled path={props.path} label={props.label} description={props.description} errors={errors}>
      {(describedBy) =>
        replacing ? (
          <div className="secret-row">
            <input
              id={id}
              type="password"
              autoComplete="off"
              value={typeof props.value === 'string' ? props.value : ''}
              onChange={(event) => props.ctx.onChange(props.path, event.target.value === '' && !original ? undefined : event.target.value)}
              aria-describedby={describedBy}
              aria-invalid={errors.length > 0 || undefined}
              spellCheck={false}
            />
            {original ? (
              <button type="button" className="small" onClick={() => props.ctx.onChange(props.path, original)}>
                Keep the stored value
              </button>
            ) : null}
          </div>
        ) : (
          <div className="secret-row">
            <output id={id} aria-describedby={describedBy} className="masked">
              Stored: <code>{stored}</code>
            </output>
            <button type="button" className="small" onClick={() => props.ctx.onChange(props.path, '')} aria-label={`Replace ${props.label}`}>
              Replace
            </button>
          </div>
        )
      }
    </Labelled>
  );
}

function ObjectField(props: { ctx: FormContext; schema: JsonSchema; path: Path; value: Json | undefined; label: string; required?: boolean }) {
  const { ctx, schema, path } = props;
  const id = fieldId(path);
  const errors = errorsAt(ctx, path, false);
  if (!isObject(props.value)) {
    return (
      <div className="field schema-field">
        <p className="schema-absent" id={id}>
          <strong>{props.label}</strong> <code className="field-key">{String(path[path.length - 1])}</code>: not set.{' '}
          <button type="button" className="small" onClick={() => ctx.onChange(path, emptyOf(schema, ctx.schemas))}>
            Set {props.label.toLowerCase()}
          </button>
        </p>
        {schema.description ? <p className="hint">{schema.description}</p> : null}
        <FieldErrors id={`${id}-errors`} messages={errors} />
      </div>
    );
  }
  const value = props.value;
  return (
    <fieldset className="schema-group" id={id} aria-describedby={schema.description ? `${id}-help` : undefined}>
      <legend>
        {props.label} {typeof path[path.length - 1] === 'string' ? <code className="field-key">{String(path[path.length - 1])}</code> : null}
      </legend>
      {schema.description ? (
        <p className="hint" id={`${id}-help`}>
          {schema.description}
        </p>
      ) : null}
      <FieldErrors id={`${id}-errors`} messages={errors} />
      {Object.entries(schema.properties ?? {}).map(([key, member]) => (
        <SchemaField key={key} ctx={ctx} schema={member} path={[...path, key]} value={value[key]} required={schema.required?.includes(key)} />
      ))}
      {!props.required && path.length > 0 && typeof path[path.length - 1] === 'string' ? (
        <button type="button" className="small" onClick={() => ctx.onChange(path, undefined)}>
          Remove {props.label.toLowerCase()}
        </button>
      ) : null}
    </fieldset>
  );
}

/** The shapes of a `oneOf` told apart by a discriminator, each with its value of it (a one-value enum, as the server writes them). */
interface Variant {
  tag: string;
  schema: JsonSchema;
}
function variantsOf(schema: JsonSchema, schemas: Record<string, JsonSchema>): Variant[] {
  const property = schema.discriminator?.propertyName;
  if (!property || !schema.oneOf) return [];
  return schema.oneOf.flatMap((option) => {
    const variant = resolveSchema(option, schemas);
    const tag = resolveSchema(variant.properties?.[property] ?? {}, schemas).enum?.[0];
    return typeof tag === 'string' ? [{ tag, schema: variant }] : [];
  });
}

/**
 * One of several shapes (an MCP server over stdio or http): a select of the shapes (the discriminator, `transport`),
 * then the chosen shape's fields. Changing the shape keeps the members both shapes have (`name`, `allowedTools`).
 */
function VariantField(props: {
  ctx: FormContext;
  schema: JsonSchema;
  variants: Variant[];
  path: Path;
  value: Json | undefined;
  label: string;
  required?: boolean;
}) {
  const { ctx, schema, variants, path } = props;
  const property = schema.discriminator!.propertyName;
  const id = fieldId(path);
  const value = isObject(props.value) ? props.value : null;
  const chosen = variants.find((variant) => variant.tag === value?.[property]);
  // A shape this console does not know (the server is newer): its JSON, as it is.
  if (value && !chosen) return <JsonField {...props} description={schema.description} />;
  const errors = errorsAt(ctx, path, false);
  const choose = (tag: string) => {
    const next = variants.find((variant) => variant.tag === tag)!;
    const kept = Object.entries(value ?? {}).filter(([key]) => key !== property && key in (next.schema.properties ?? {}));
    ctx.onChange(path, { ...(emptyOf(next.schema, ctx.schemas) as JsonObject), ...Object.fromEntries(kept), [property]: tag });
  };
  if (!value || !chosen) {
    return (
      <div className="field schema-field">
        <p className="schema-absent" id={id}>
          <strong>{props.label}</strong>: not set.{' '}
          <button type="button" className="small" onClick={() => choose(variants[0].tag)}>
            Set {props.label.toLowerCase()}
          </button>
        </p>
        <FieldErrors id={`${id}-errors`} messages={errors} />
      </div>
    );
  }
  const selectId = fieldId([...path, property]);
  const selectErrors = errorsAt(ctx, [...path, property], false);
  const described =
    [chosen.schema.description ? `${selectId}-help` : '', selectErrors.length > 0 ? `${selectId}-errors` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <fieldset className="schema-group" id={id} aria-describedby={schema.description ? `${id}-help` : undefined}>
      <legend>
        {props.label} {typeof path[path.length - 1] === 'string' ? <code className="field-key">{String(path[path.length - 1])}</code> : null}
      </legend>
      {schema.description ? (
        <p className="hint" id={`${id}-help`}>
          {schema.description}
        </p>
      ) : null}
      <FieldErrors id={`${id}-errors`} messages={errors} />
      <div className={`field schema-field${selectErrors.length > 0 ? ' has-error' : ''}`}>
        <label htmlFor={selectId}>{humanize(property)}</label>
        <code className="field-key">{property}</code>
        <select
          id={selectId}
          value={chosen.tag}
          onChange={(event) => choose(event.target.value)}
          aria-describedby={described}
          aria-invalid={selectErrors.length > 0 || undefined}
        >
          {variants.map((variant) => (
            <option key={variant.tag} value={variant.tag}>
              {variant.tag}
            </option>
          ))}
        </select>
        {chosen.schema.description ? (
          <p className="hint" id={`${selectId}-help`}>
            {chosen.schema.description}
          </p>
        ) : null}
        <FieldErrors id={`${selectId}-errors`} messages={selectErrors} />
      </div>
      {Object.entries(chosen.schema.properties ?? {})
        .filter(([key]) => key !== property)
        .map(([key, member]) => (
          <SchemaField
            key={`${chosen.tag}:${key}`}
            ctx={ctx}
            schema={member}
            path={[...path, key]}
            value={value[key]}
            required={chosen.schema.required?.includes(key)}
          />
        ))}
      {!props.required && path.length > 0 && typeof path[path.length - 1] === 'string' ? (
        <button type="button" className="small" onClick={() => ctx.onChange(path, undefined)}>
          Remove {props.label.toLowerCase()}
        </button>
      ) : null}
    </fieldset>
  );
}

function ListField(props: { ctx: FormContext; path: Path; value: Json | undefined; label: string; description?: string; itemSchema: JsonSchema }) {
  const { ctx, path } = props;
  const id = fieldId(path);
  const items = Array.isArray(props.value) ? props.value : [];
  const errors = errorsAt(ctx, path, false);
  return (
    <fieldset className="schema-group" id={id}>
      <legend>
        {props.label} <code className="field-key">{String(path[path.length - 1])}</code>
      </legend>
      {props.description ? <p className="hint">{props.description}</p> : null}
      <FieldErrors id={`${id}-errors`} messages={errors} />
      {items.length === 0 ? <p className="muted">None.</p> : null}
      {items.map((item, index) => (
        <div className="schema-item" key={index}>
          <SchemaField ctx={ctx} schema={props.itemSchema} path={[...path, index]} value={item} label={`${props.label} ${index + 1}`} required />
          <button
            type="button"
            className="small"
            onClick={() =>
              ctx.onChange(
                path,
                items.filter((_, i) => i !== index),
              )
            }
          >
            Remove {props.label.toLowerCase()} {index + 1}
          </button>
        </div>
      ))}
      <button type="button" className="small" onClick={() => ctx.onChange(path, [...items, emptyOf(props.itemSchema, ctx.schemas)])}>
        Add to {props.label.toLowerCase()}
      </button>
    </fieldset>
  );
}

/** A map: one row per key (remove it, or edit its value), and a key to add. */
function MapField(props: { ctx: FormContext; schema: JsonSchema; path: Path; value: Json | undefined; label: string }) {
  const { ctx, path } = props;
  const id = fieldId(path);
  const entries = isObject(props.value) ? Object.entries(props.value) : [];
  const valueSchema = props.schema.additionalProperties as JsonSchema;
  const [newKey, setNewKey] = useState('');
  const errors = errorsAt(ctx, path, false);
  const add = () => {
    const key = newKey.trim();
    if (!key || entries.some(([existing]) => existing === key)) return;
    ctx.onChange([...path, key], emptyOf(valueSchema, ctx.schemas));
    setNewKey('');
  };
  return (
    <fieldset className="schema-group" id={id}>
      <legend>
        {props.label} <code className="field-key">{String(path[path.length - 1])}</code>
      </legend>
      {props.schema.description ? <p className="hint">{props.schema.description}</p> : null}
      <FieldErrors id={`${id}-errors`} messages={errors} />
      {entries.length === 0 ? <p className="muted">None.</p> : null}
      {entries.map(([key, item]) => (
        <div className="schema-item" key={key}>
          <SchemaField ctx={ctx} schema={valueSchema} path={[...path, key]} value={item} label={key} required />
          <button type="button" className="small" onClick={() => ctx.onChange([...path, key], undefined)}>
            Remove {key}
          </button>
        </div>
      ))}
      <div className="secret-row">
        <label htmlFor={`${id}-new`} className="visually-hidden">
          New key for {props.label.toLowerCase()}
        </label>
        <input
          id={`${id}-new`}
          value={newKey}
          placeholder="New key"
          onChange={(event) => setNewKey(event.target.value)}
          onKeyDown={(event) => event.key === 'Enter' && (event.preventDefault(), add())}
        />
        <button type="button" className="small" onClick={add} disabled={!newKey.trim()}>
          Add to {props.label.toLowerCase()}
        </button>
      </div>
    </fieldset>
  );
}
