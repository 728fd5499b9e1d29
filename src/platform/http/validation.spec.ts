import { ErrorKind, RequestError, RequestErrorCode, statusOf } from './domain-error';
import { closedObject, displayName, SchemaRegistry } from './json-schema';
import { pageQuery } from './pagination';
import { checkQueryKeys, FieldError, validationError } from './validation';

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
    expect(error.metadata).toEqual({ errors });
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
});

const registry = new SchemaRegistry('validation-spec').add({
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
