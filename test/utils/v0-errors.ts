import type { Response } from 'supertest';

/** Fails with the response body in the diff, not just the status. */
export function expectStatus(res: Response, status: number): void {
  expect({ status: res.status, body: res.body as unknown }).toMatchObject({ status });
}

/** The v0 error body: exactly detail, status, title and metadata (with its code). */
export function expectV0Error(res: Response, status: number, code: string): void {
  expectStatus(res, status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['detail', 'metadata', 'status', 'title']);
  expect(res.body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String), metadata: { code } });
  expect((res.body.detail as string).length).toBeGreaterThan(0);
}

const escape = (field: string) => field.replace(/[.[\]$]/g, '\\$&');

/**
 * 400 validation_failed with `field` among `metadata.errors` and named in `detail`; with
 * `first`, it must also be the first error.
 */
export function expectInvalid(res: Response, field: string, { first = false }: { first?: boolean } = {}): void {
  expectV0Error(res, 400, 'validation_failed');
  const errors = res.body.metadata.errors as Array<{ field: string; message: string }>;
  expect(errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
  if (first) expect(errors[0].field).toBe(field);
  expect(res.body.detail).toMatch(new RegExp(`^${escape(field)}: `));
}

/** The message given for `field` in a 400. */
export function messageFor(res: Response, field: string): string {
  const errors = res.body.metadata.errors as Array<{ field: string; message: string }>;
  return errors.find((e) => e.field === field)?.message ?? '';
}

/**
 * What is wrong with an error answer for its path's flavour (docs/api.md, Errors): exactly its keys, the status
 * repeated, a snake_case code on v0; the analytics and readiness body on /api/v1/ and /api/organization/.
 */
export function errorBodyProblem(path: string, status: number, res: Response): string | undefined {
  const body = res.body as Record<string, unknown>;
  if (!/^application\/json/.test(String(res.headers['content-type']))) return `an error answered as ${String(res.headers['content-type'])}`;
  const keys = Object.keys(body ?? {}).sort();
  const requestId = path.startsWith('/api/v1/') || path.startsWith('/api/organization/');
  const allowed = requestId
    ? ['detail', 'requestId', 'status', 'title', ...(path.startsWith('/api/organization/') ? ['metadata'] : [])]
    : ['detail', 'metadata', 'status', 'title'];
  const required = requestId ? ['detail', 'requestId', 'status', 'title'] : ['detail', 'metadata', 'status', 'title'];
  if (keys.some((key) => !allowed.includes(key)) || required.some((key) => !keys.includes(key))) return `error body keys ${keys.join(', ')}`;
  if (body.status !== status || typeof body.title !== 'string' || typeof body.detail !== 'string' || body.detail === '') return 'error body fields';
  const code = (body.metadata as Record<string, unknown> | undefined)?.code;
  if (!requestId && (typeof code !== 'string' || !/^[a-z_]+$/.test(code))) return `metadata.code ${JSON.stringify(code)}`;
  return undefined;
}
