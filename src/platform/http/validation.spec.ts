import 'reflect-metadata';
import { ValidationError } from '@nestjs/common';
import { plainToInstance, Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, ValidateNested, validateSync } from 'class-validator';
import { ErrorKind, RequestError, RequestErrorCode, statusOf } from './domain-error';
import { createValidationPipe, flattenValidationErrors, validationError } from './validation';

class Line {
  @IsString()
  c: string;

  @IsOptional()
  @IsInt()
  @Max(10)
  qty?: number;
}

class Address {
  @IsString()
  @MaxLength(5)
  b: string;

  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => Line)
  lines?: Line[];
}

class Order {
  @IsString()
  name: string;

  @ValidateNested()
  @Type(() => Address)
  a: Address;

  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => Line)
  items?: Line[];
}

/** Validates a plain object the way the global pipe does. */
function check(plain: object, whitelist = false) {
  const errors = validateSync(plainToInstance(Order, plain), {
    whitelist,
    forbidNonWhitelisted: whitelist,
    validationError: { target: false, value: false },
  });
  return flattenValidationErrors(errors);
}

const ok = { name: 'n', a: { b: 'x' } };

describe('flattenValidationErrors', () => {
  it('gives nothing for a valid object', () => {
    expect(check({ ...ok, items: [{ c: 'x', qty: 1 }] }, true)).toEqual([]);
  });

  it('names a top-level field and drops the property name from the message', () => {
    expect(check({ ...ok, name: 3 })).toEqual([{ field: 'name', message: 'must be a string' }]);
  });

  it('names a nested field a.b', () => {
    expect(check({ name: 'n', a: { b: 'too long' } })).toEqual([{ field: 'a.b', message: 'must be shorter than or equal to 5 characters' }]);
  });

  it('names an array element a[2].c, and deeper a.lines[1].qty', () => {
    expect(check({ ...ok, items: [{ c: 'x' }, { c: 'y' }, { c: 4 }] })).toEqual([{ field: 'items[2].c', message: 'must be a string' }]);
    expect(check({ name: 'n', a: { b: 'x', lines: [{ c: 'x' }, { c: 'y', qty: 11 }] } })).toEqual([
      { field: 'a.lines[1].qty', message: 'must not be greater than 10' },
    ]);
  });

  it('lists one entry per broken rule, in order, across the tree', () => {
    const errors = check({ name: 1, a: { b: 2 }, items: [{ c: 1, qty: 1.5 }] });
    expect(errors.map((e) => e.field)).toEqual(['name', 'a.b', 'a.b', 'items[0].c', 'items[0].qty']);
    expect(
      errors
        .filter((e) => e.field === 'a.b')
        .map((e) => e.message)
        .sort(),
    ).toEqual(['must be a string', 'must be shorter than or equal to 5 characters'].sort());
    expect(errors.find((e) => e.field === 'items[0].qty')?.message).toBe('must be an integer number');
  });

  it('says "is not an accepted field" for a field the whitelist forbids, at any depth', () => {
    expect(check({ ...ok, extra: 1 }, true)).toEqual([{ field: 'extra', message: 'is not an accepted field' }]);
    expect(check({ name: 'n', a: { b: 'x', zip: '1' } }, true)).toEqual([{ field: 'a.zip', message: 'is not an accepted field' }]);
    expect(check({ ...ok, items: [{ c: 'x' }, { c: 'y', colour: 'red' }] }, true)).toEqual([{ field: 'items[1].colour', message: 'is not an accepted field' }]);
  });

  it('flattens hand-built trees: parent prefixes, numeric segments, and messages left alone', () => {
    const tree: ValidationError[] = [
      {
        property: 'a',
        children: [
          {
            property: '2',
            children: [{ property: 'c', constraints: { isString: 'c must be a string' }, children: [] }],
          },
          { property: 'b', constraints: { custom: 'something else entirely' }, children: [] },
        ],
      },
      { property: '0', constraints: { x: 'property 0 should not exist' } },
    ];
    expect(flattenValidationErrors(tree)).toEqual([
      { field: 'a[2].c', message: 'must be a string' },
      { field: 'a.b', message: 'something else entirely' },
      { field: '[0]', message: 'is not an accepted field' },
    ]);
    expect(flattenValidationErrors(tree, 'body')[0]).toEqual({ field: 'body.a[2].c', message: 'must be a string' });
  });

  it('only strips the property name when it is a whole word at the start', () => {
    const tree: ValidationError[] = [{ property: 'name', constraints: { x: 'names must differ' } }];
    expect(flattenValidationErrors(tree)).toEqual([{ field: 'name', message: 'names must differ' }]);
  });
});

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

describe('createValidationPipe', () => {
  const pipe = createValidationPipe();
  const body = { type: 'body' as const, metatype: Order, data: undefined };

  async function failure(value: unknown): Promise<RequestError> {
    const error = await pipe.transform(value, body).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RequestError);
    return error as RequestError;
  }

  it('turns a valid body into a DTO instance', async () => {
    const result = await pipe.transform({ name: 'n', a: { b: 'x' }, items: [{ c: 'k' }] }, body);
    expect(result).toBeInstanceOf(Order);
    expect(result.a).toBeInstanceOf(Address);
    expect(result.items[0]).toBeInstanceOf(Line);
  });

  it('rejects unknown fields and nested problems with paths, without echoing values', async () => {
    const error = await failure({ name: 'n', a: { b: 'secret-value-xyz' }, items: [{ c: 'k' }, { c: 1 }], extra: 'hidden-value-abc' });
    expect(error.code).toBe(RequestErrorCode.ValidationFailed);
    const errors = (error.metadata as { errors: Array<{ field: string; message: string }> }).errors;
    expect(new Set(errors.map((e) => e.field))).toEqual(new Set(['extra', 'a.b', 'items[1].c']));
    expect(errors.find((e) => e.field === 'extra')?.message).toBe('is not an accepted field');
    expect(error.message).toMatch(/^(extra|name|a\.b|items\[1\]\.c): .+ \(and 2 more problems\)$/);
    expect(JSON.stringify(error.metadata)).not.toMatch(/secret-value-xyz|hidden-value-abc/);
  });

  it('rejects a body that is not an object at all', async () => {
    expect((await failure('just a string')).code).toBe(RequestErrorCode.ValidationFailed);
  });
});
