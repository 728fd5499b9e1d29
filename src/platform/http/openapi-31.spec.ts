import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import { toOpenApi31, toSchema31 } from './openapi-31';

describe('toSchema31', () => {
  it('widens a nullable type, keeps enum, and leaves the input alone', () => {
    const input = { type: 'string', nullable: true, enum: ['a', null], example: 'a' };
    expect(toSchema31(input)).toEqual({ type: ['string', 'null'], enum: ['a', null], examples: ['a'] });
    expect(input).toEqual({ type: 'string', nullable: true, enum: ['a', null], example: 'a' });
  });

  it('wraps a nullable schema without a type in anyOf with null, annotations outside', () => {
    expect(toSchema31({ $ref: '#/components/schemas/X', nullable: true, description: 'd' })).toEqual({
      description: 'd',
      anyOf: [{ $ref: '#/components/schemas/X' }, { type: 'null' }],
    });
  });

  it('turns boolean exclusive bounds into numbers and drops nullable: false', () => {
    expect(toSchema31({ type: 'integer', minimum: 0, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: false, nullable: false })).toEqual({
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 9,
    });
  });

  it('accepts exactly what Ajv accepts of the 3.0 schema, nested schemas included', () => {
    const schema = {
      type: 'object',
      properties: {
        a: { type: 'integer', nullable: true, minimum: 1, exclusiveMinimum: true },
        b: { type: 'array', items: { type: 'string', nullable: true, enum: ['x', null] } },
        c: { type: 'object', nullable: true, additionalProperties: { type: 'number', nullable: true } },
      },
      additionalProperties: false,
    };
    const before = new Ajv({ strict: false, allowUnionTypes: true }).compile({
      ...schema,
      properties: { ...schema.properties, a: { type: 'integer', nullable: true, exclusiveMinimum: 1 } },
    });
    const after = new Ajv2020({ strict: true, allowUnionTypes: true }).compile(toSchema31(schema) as object);
    const values = [
      {},
      { a: null },
      { a: 1 },
      { a: 2 },
      { a: 'x' },
      { b: ['x', null] },
      { b: ['y'] },
      { c: null },
      { c: { k: null, l: 2 } },
      { c: { k: 'n' } },
      { d: 1 },
    ];
    for (const value of values) expect([value, after(value)]).toEqual([value, before(value)]);
  });
});

describe('toOpenApi31', () => {
  it('converts schemas in components, parameters, bodies, responses and response headers', () => {
    const nullable = { type: 'string', nullable: true };
    const converted = toOpenApi31({
      components: { schemas: { S: nullable } },
      paths: {
        '/x': {
          post: {
            parameters: [{ name: 'p', in: 'query', schema: nullable }],
            requestBody: { content: { 'application/json': { schema: nullable } } },
            responses: { '200': { headers: { H: { schema: nullable } }, content: { 'application/json': { schema: nullable } } } },
          },
        },
      },
    });
    expect(JSON.stringify(converted)).not.toContain('nullable');
    expect(JSON.stringify(converted).match(/\["string","null"\]/g)).toHaveLength(5);
  });

  it("writes the mapping a discriminator implies (each branch's one-value enum), where Ajv reads it and OpenAPI would read schema names", () => {
    const union = { oneOf: [{ $ref: '#/components/schemas/Text' }, { $ref: '#/components/schemas/Image' }], discriminator: { propertyName: 'type' } };
    const input = {
      components: {
        schemas: {
          Text: { type: 'object', properties: { type: { type: 'string', enum: ['text'] } } },
          Image: { type: 'object', properties: { type: { type: 'string', enum: ['image'] } } },
          Block: union,
          Message: { type: 'object', properties: { content: { type: 'array', items: union } } },
          Untagged: { oneOf: [{ $ref: '#/components/schemas/Text' }, { type: 'object' }], discriminator: { propertyName: 'type' } },
          Mapped: { ...union, discriminator: { propertyName: 'type', mapping: { t: '#/components/schemas/Text' } } },
        },
      },
      paths: { '/x': { post: { requestBody: { content: { 'application/json': { schema: union } } } } } },
    };
    const converted = toOpenApi31(input);
    const mapping = { text: '#/components/schemas/Text', image: '#/components/schemas/Image' };
    expect(converted.components.schemas.Block.discriminator).toEqual({ propertyName: 'type', mapping });
    expect(converted.components.schemas.Message.properties.content.items.discriminator).toEqual({ propertyName: 'type', mapping });
    expect(converted.paths['/x'].post.requestBody.content['application/json'].schema.discriminator).toEqual({ propertyName: 'type', mapping });
    // A branch without a tag of its own leaves the union as it was; a mapping already written is kept.
    expect(converted.components.schemas.Untagged.discriminator).toEqual({ propertyName: 'type' });
    expect(converted.components.schemas.Mapped.discriminator).toEqual({ propertyName: 'type', mapping: { t: '#/components/schemas/Text' } });
    expect(input.components.schemas.Block.discriminator).toEqual({ propertyName: 'type' });
  });
});
