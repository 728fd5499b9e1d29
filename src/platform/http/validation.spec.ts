import { ErrorKind, RequestError, RequestErrorCode, statusOf } from './domain-error';
import { closedObject, displayName, SchemaRegistry } from './json-schema';
import { pageQuery } from './pagination';
import { checkQueryKeys, FieldError, MAX_REPORTED_ERRORS, validationError } from './validation';

describe('validationError', () => {
  it('is a 400 validation_failed naming the first field, listing every problem', () => {
    const errors = [
      { field: 'a.b', message: 'must be a string' },
      { field: 'items[2].c', message: 'is not an accepted field' },
      { field: 'name', message: 'should not be empty' },
    ];
    const error = validationError(errors);
    expect(error).toBeInstanceOf(RequestError);
    expect(error.code).toBe(RequestErrorCode.ValidationFailed);
    expect(statusOf(error.kind)).toBe(400);
    expect(error.kind).toBe(ErrorKind.InvalidRequest);
    expect(error.message).toBe('a.b: must be a string (and 2 more problems)');
    expect(error.metadata).toEqual({ errors, errorCount: 3 });
  });

  it('counts in the singular and says nothing more for one problem', () => {
    expect(
      validationError([
        { field: 'x', message: 'm' },
        { field: 'y', message: 'n' },
      ]).message,
    ).toBe('x: m (and 1 more problem)');
    expect(validationError([{ field: 'x', message: 'm' }]).message).toBe('x: m');
    expect(validationError([]).message).toBe('The request is invalid.');
  });

  it('lists the first 20 problems and counts the rest, however many a client causes', () => {
    const errors = Array.from({ length: 5000 }, (_, i) => ({ field: `tags[${i}]`, message: 'must be a string' }));
    const error = validationError(errors);
    expect(error.metadata.errors).toEqual(errors.slice(0, MAX_REPORTED_ERRORS));
    expect(error.metadata.errorCount).toBe(5000);
    expect(error.message).toBe('tags[0]: must be a string (and 4999 more problems)');
    expect(validationError(errors.slice(0, 3), 70_000).metadata).toMatchObject({ errorCount: 70_000 });
  });

  it('quotes a field named by a huge or unprintable key short and printable', () => {
    const error = validationError([{ field: `a.${'k'.repeat(100_000)}\u0000\ud800`, message: 'x'.repeat(10_000) }]);
    const [listed] = error.metadata.errors as FieldError[];
    expect(listed.field.length).toBeLessThanOrEqual(203);
    expect(listed.message.length).toBeLessThanOrEqual(503);
    expect(JSON.stringify(error.metadata).length).toBeLessThan(1000);
    expect(validationError([{ field: 'a\u0000\ud800b', message: 'm' }]).metadata.errors).toEqual([{ field: 'a??b', message: 'm' }]);
  });
});

const registry = new SchemaRegistry('validation-spec').add({
  TagsBody: closedObject(['title'], {
    title: { type: 'string', maxLength: 10 },
    tags: { type: 'array', maxItems: 3, items: { type: 'string', enum: ['a', 'b'] } },
    // This registry's own schemas, which the document does not publish (`ref` takes only the document's names).
    block: {
      type: 'object',
      oneOf: [{ $ref: '#/components/schemas/TextPart' }, { $ref: '#/components/schemas/ListPart' }],
      discriminator: { propertyName: 'type' },
    },
    either: { oneOf: [{ type: 'string' }, { type: 'array', maxItems: 2, items: { type: 'string' } }] },
  }),
  TextPart: closedObject(['type'], { type: { type: 'string', enum: ['text'] }, text: { type: 'string' } }),
  ListPart: closedObject(['type'], { type: { type: 'string', enum: ['list'] }, items: { type: 'array', maxItems: 2, items: { type: 'integer' } } }),
  ListThingsQuery: pageQuery({ colour: { type: 'string', enum: ['red', 'blue'], 'x-problem': 'must be red or blue' } }, ['colour']),
  NameBody: closedObject(['name'], { name: displayName('a name for the thing', 10, 'Widget') }),
});

/** The problems a query pipe or a body check reports, or none. */
function problems(run: () => unknown): FieldError[] {
  try {
    run();
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(RequestError);
    return (error as RequestError).metadata.errors as FieldError[];
  }
}
const query = (value: unknown) => problems(() => registry.queryPipe('ListThingsQuery').transform(value, { type: 'query' }));
const name = (value: unknown) => problems(() => registry.check('NameBody', value));
const tags = (value: unknown) => registry.problems('TagsBody', value);

describe('a query string, checked by its schema', () => {
  it('passes a valid query through as a plain copy', () => {
    const value = Object.assign(Object.create(null) as object, { colour: 'red', limit: '5' });
    const result = registry.queryPipe('ListThingsQuery').transform(value, { type: 'query' }) as object;
    expect(result).toEqual({ colour: 'red', limit: '5' });
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
  });

  it('names an unknown key, prototype keys included, and lists the accepted ones', () => {
    for (const key of ['constructor', '__proto__', 'prototype', 'colur']) {
      const value = JSON.parse(`{"colour":"red",${JSON.stringify(key)}:"x"}`) as object;
      expect(query(value)).toEqual([{ field: key, message: 'is not an accepted query parameter (accepted: colour, limit, cursor)' }]);
    }
  });

  it('refuses a repeated key before reading its values', () => {
    expect(query({ colour: ['red', 'blue'] })).toEqual([{ field: 'colour', message: 'is repeated: give each query parameter once' }]);
  });

  it('names missing and broken values with the messages the schema gives', () => {
    expect(query({})).toEqual([{ field: 'colour', message: 'is required' }]);
    expect(query({ colour: 'green', limit: '0' })).toEqual([
      { field: 'colour', message: 'must be red or blue' },
      { field: 'limit', message: 'must be a whole number from 1 to 100' },
    ]);
  });

  it('answers for no query string at all as for an empty one', () => {
    expect(query(undefined)).toEqual([{ field: 'colour', message: 'is required' }]);
  });

  it('lets a route without parameters refuse every key', () => {
    expect(problems(() => checkQueryKeys({ a: '1' }, []))).toEqual([
      { field: 'a', message: 'is not an accepted query parameter (this operation takes no query parameters)' },
    ]);
  });
});

describe('a display name', () => {
  it('says what is missing, with an example', () => {
    expect(name({})).toEqual([{ field: 'name', message: 'is required: a name for the thing, 1 to 10 characters (e.g. "Widget")' }]);
  });

  it('is one line, not blank, not too long, a string', () => {
    expect(name({ name: 'Widget' })).toEqual([]);
    expect(name({ name: '' })).toEqual([{ field: 'name', message: 'must not be blank' }]);
    expect(name({ name: '   ' })).toEqual([{ field: 'name', message: 'must not be blank' }]);
    expect(name({ name: 'a\nb' })).toEqual([{ field: 'name', message: 'must be one line without control characters' }]);
    expect(name({ name: 'x'.repeat(11) })).toEqual([{ field: 'name', message: 'must be shorter than or equal to 10 characters' }]);
    expect(name({ name: 7 })).toEqual([{ field: 'name', message: 'must be a string' }]);
  });
});

describe('a hostile body: what it costs is bounded by its size, not by what it holds', () => {
  it('reports an array over its maxItems once, without a problem per item', () => {
    const found = tags({ title: 'x', tags: Array(499_000).fill(0) });
    expect(found.errors).toEqual([{ field: 'tags', message: 'must NOT have more than 3 items' }]);
    expect(found.total).toBe(1);
  });

  it('follows the branch a discriminator or a type picks, and only that one', () => {
    expect(tags({ title: 'x', block: { type: 'list', items: Array(10_000).fill('no') } }).errors).toEqual([
      { field: 'block.items', message: 'must NOT have more than 2 items' },
    ]);
    expect(tags({ title: 'x', either: Array(10_000).fill(1) }).errors).toEqual([{ field: 'either', message: 'must NOT have more than 2 items' }]);
    // The text branch has no list to count: the full validation says what is wrong.
    expect(tags({ title: 'x', block: { type: 'text', items: [1, 2, 3] } }).errors).toEqual([{ field: 'block.items', message: 'is not an accepted field' }]);
  });

  it('counts a flood of unknown keys and lists the first 20', () => {
    const body: Record<string, unknown> = { title: 'x' };
    for (let i = 0; i < 50_000; i++) body[`k${i}`] = i;
    const found = tags(body);
    expect(found.total).toBe(50_000);
    expect(found.errors).toHaveLength(MAX_REPORTED_ERRORS);
    expect(found.errors[0]).toEqual({ field: 'k0', message: 'is not an accepted field' });
  });

  it('still names every problem of a body within its counts', () => {
    const found = tags({ tags: ['a', 'z'], colour: 1 });
    expect(found.errors).toEqual(
      expect.arrayContaining([
        { field: 'title', message: 'is required' },
        { field: 'colour', message: 'is not an accepted field' },
        { field: 'tags[1]', message: 'must be one of: a, b' },
      ]),
    );
    expect(found.total).toBe(3);
  });

  it('names the strings PostgreSQL cannot store, in a body that is otherwise valid', () => {
    const found = tags({ title: 'x', either: 'a\u0000', block: { type: 'text', text: '\ud800' } });
    expect(found.errors.map(({ field }) => field)).toEqual(['either', 'block.text']);
  });
});
