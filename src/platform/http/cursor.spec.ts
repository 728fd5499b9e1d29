import { decodeCursor, encodeCursor, sealCursor } from './cursor';
import { ErrorKind, RequestError, RequestErrorCode, statusOf } from './domain-error';

const ID = '0190f3a2-7c1e-7d3b-9a4f-1b2c3d4e5f60';
// JSON values are sealed with a valid checksum, so the shape checks are what refuses them.
const b64 = (value: unknown) => (typeof value === 'string' ? Buffer.from(value, 'utf8').toString('base64url') : sealCursor(value));

/** Runs `decode` and returns the error it throws, failing the test when it does not throw. */
function rejection(decode: () => unknown): RequestError {
  let thrown: unknown;
  try {
    decode();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(RequestError);
  return thrown as RequestError;
}

describe('cursor', () => {
  describe('round trip', () => {
    it('decodes what it encodes, for numbers, strings and uuids', () => {
      const cursor = encodeCursor('api-keys', [1_767_225_600_123, ID]);
      expect(decodeCursor('api-keys', cursor, ['number', 'uuid'])).toEqual([1_767_225_600_123, ID]);

      const other = encodeCursor('things', ['b', 0, 'ünïcödé ✓']);
      expect(decodeCursor('things', other, ['string', 'number', 'string'])).toEqual(['b', 0, 'ünïcödé ✓']);
    });

    it('is opaque base64url: no padding, no +, / or =, and does not show the key in clear', () => {
      for (let n = 0; n < 40; n++) {
        const cursor = encodeCursor('api-keys', [1_700_000_000_000 + n, ID]);
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
        expect(cursor).not.toContain(ID);
      }
    });

    it('is base64url of [list, ...key], then a checksum', () => {
      const cursor = encodeCursor('api-keys', [5, ID]);
      const [payload] = cursor.split('.');
      expect(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))).toEqual(['api-keys', 5, ID]);
    });

    it('refuses a cursor whose payload or checksum was changed', () => {
      const cursor = encodeCursor('api-keys', [5, ID]);
      const [payload, check] = cursor.split('.');
      const otherPayload = Buffer.from(JSON.stringify(['api-keys', 6, ID])).toString('base64url');
      expect(() => decodeCursor('api-keys', `${otherPayload}.${check}`, ['number', 'uuid'])).toThrow();
      expect(() => decodeCursor('api-keys', `${payload}.${check.slice(1)}A`, ['number', 'uuid'])).toThrow();
      expect(() => decodeCursor('api-keys', payload, ['number', 'uuid'])).toThrow();
    });

    it('accepts an uppercase uuid, negative and zero numbers, and a 256-character string', () => {
      expect(decodeCursor('l', b64(['l', ID.toUpperCase()]), ['uuid'])).toEqual([ID.toUpperCase()]);
      expect(decodeCursor('l', b64(['l', -1, 0]), ['number', 'number'])).toEqual([-1, 0]);
      expect(decodeCursor('l', b64(['l', 'x'.repeat(256)]), ['string'])).toEqual(['x'.repeat(256)]);
    });
  });

  describe('rejections', () => {
    const valid = encodeCursor('api-keys', [1_767_225_600_123, ID]);
    const decode =
      (cursor: string, list = 'api-keys') =>
      () =>
        decodeCursor(list, cursor, ['number', 'uuid']);

    it('the error is a 400 invalid_cursor naming the cursor field', () => {
      const error = rejection(decode('!!!'));
      expect(error.code).toBe(RequestErrorCode.InvalidCursor);
      expect(error.kind).toBe(ErrorKind.InvalidRequest);
      expect(statusOf(error.kind)).toBe(400);
      expect(error.message).toMatch(/^cursor: /);
      expect(error.metadata).toEqual({ errors: [{ field: 'cursor', message: 'is not a valid cursor for this list' }] });
    });

    it.each([
      ['empty', ''],
      ['standard base64 with +, / and =', Buffer.from('[["api-keys"]]>>>??').toString('base64')],
      ['padding', `${valid}==`],
      ['a space', `${valid.slice(0, 5)} ${valid.slice(5)}`],
      ['a dot', `${valid}.`],
      ['non-ASCII', `${valid}é`],
    ])('not base64url: %s', (_, cursor) => {
      expect(rejection(decode(cursor)).code).toBe(RequestErrorCode.InvalidCursor);
    });

    it.each([
      ['not JSON', b64('hello world')],
      ['truncated JSON', valid.slice(0, valid.length - 6)],
      ['random bytes', Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00, 0xff, 0x10, 0x80]).toString('base64url')],
      ['the first character changed', `${valid[0] === 'A' ? 'B' : 'A'}${valid.slice(1)}`],
    ])('not JSON once decoded: %s', (_, cursor) => {
      expect(rejection(decode(cursor)).code).toBe(RequestErrorCode.InvalidCursor);
    });

    it.each([
      ['an object', { list: 'api-keys', key: [1, ID] }],
      ['a string', 'api-keys'],
      ['a number', 42],
      ['null', null],
      ['too few keys', ['api-keys', 1]],
      ['too many keys', ['api-keys', 1, ID, 'extra']],
      ['only the list', ['api-keys']],
      ['an empty array', []],
    ])('not [list, ...key] of the right length: %s', (_, value) => {
      expect(rejection(decode(b64(value))).code).toBe(RequestErrorCode.InvalidCursor);
    });

    it('issued by another list', () => {
      const foreign = encodeCursor('sessions', [1_767_225_600_123, ID]);
      expect(rejection(decode(foreign)).code).toBe(RequestErrorCode.InvalidCursor);
      // ...and the same cursor is fine for the list that issued it.
      expect(decodeCursor('sessions', foreign, ['number', 'uuid'])).toEqual([1_767_225_600_123, ID]);
    });

    it('the list name differs only in case or is missing', () => {
      expect(rejection(decode(b64(['API-KEYS', 1, ID]))).code).toBe(RequestErrorCode.InvalidCursor);
      expect(rejection(decode(b64([null, 1, ID]))).code).toBe(RequestErrorCode.InvalidCursor);
    });

    it.each([
      ['a numeric string', ['api-keys', '1767225600123', ID]],
      ['a fraction', ['api-keys', 1.5, ID]],
      ['beyond the safe integers', ['api-keys', 2 ** 53, ID]],
      ['null', ['api-keys', null, ID]],
      ['a boolean', ['api-keys', true, ID]],
      ['an array', ['api-keys', [1], ID]],
    ])('a number key that is %s', (_, value) => {
      expect(rejection(decode(b64(value))).code).toBe(RequestErrorCode.InvalidCursor);
    });

    it.each([
      ['not a uuid', ['api-keys', 1, 'not-a-uuid']],
      ['a uuid without dashes', ['api-keys', 1, ID.replaceAll('-', '')]],
      ['a uuid with extra characters', ['api-keys', 1, `${ID}0`]],
      ['a number', ['api-keys', 1, 7]],
      ['empty', ['api-keys', 1, '']],
      ['SQL', ['api-keys', 1, "' OR 1=1 --"]],
    ])('a uuid key that is %s', (_, value) => {
      expect(rejection(decode(b64(value))).code).toBe(RequestErrorCode.InvalidCursor);
    });

    it.each([
      ['empty', ['l', '']],
      ['longer than 256 characters', ['l', 'x'.repeat(257)]],
      ['a number', ['l', 5]],
      ['an object', ['l', { a: 1 }]],
    ])('a string key that is %s', (_, value) => {
      expect(rejection(() => decodeCursor('l', b64(value), ['string'])).code).toBe(RequestErrorCode.InvalidCursor);
    });
  });
});
