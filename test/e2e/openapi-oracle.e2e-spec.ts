import request from 'supertest';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { checkedAgent, OpenApiOracle } from '../utils/openapi-oracle';
import { startTestApp, TestApp } from '../utils/test-app';

const ME = '/api/v0/me';
const MEMBERS = '/api/v0/organization/members';

/**
 * The oracle every e2e request goes through (test/utils/openapi-oracle.ts): it must fail an answer the document
 * does not describe, and fail the test that received it.
 */
describe('OpenAPI oracle', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createUser(t, Role.Owner);
  });

  afterAll(() => t.close());

  /** The app's document, changed by `edit`, as the oracle of a supertest agent on the real app. */
  const agentWith = (edit: (document: OpenApiOracle['document']) => void) => {
    const document = structuredClone(t.oracle().document);
    edit(document);
    const oracle = new OpenApiOracle(document);
    return checkedAgent(request(t.app.getHttpServer()), oracle);
  };
  const responsesOf = (document: OpenApiOracle['document'], path: string, method: string) =>
    (document.paths[path][method] as { responses: Record<string, unknown> }).responses;

  it('passes what the document describes, through t.http() and a chained .expect()', async () => {
    const res = await t.http().get(ME).set(owner.auth).expect(200);
    expect(res.body.user.id).toBe(owner.userId);
    expect(() => t.oracle().checkResponse('GET', ME, 200, res.headers, res.body)).not.toThrow();
  });

  it('fails a status the operation does not list, naming the operation, the status and the body', async () => {
    const http = agentWith((document) => delete responsesOf(document, ME, 'get')['200']);
    await expect(http.get(ME).set(owner.auth).then()).rejects.toThrow(
      /OpenAPI oracle: GET \/api\/v0\/me 200: the document does not list 200 \(it lists 400, 401, 403, 429, 431, 503\)/,
    );
    await expect(http.get(ME).set(owner.auth).expect(200).then()).rejects.toThrow(/body: {"user":{"id":"/);
  });

  it('fails a body that breaks the schema of its status, with the errors Ajv found', async () => {
    const http = agentWith((document) => {
      const schemas = document.components!.schemas as Record<string, { required: string[] }>;
      schemas.MeView.required.push('shoeSize');
    });
    await expect(http.get(ME).set(owner.auth).then()).rejects.toThrow(
      /GET \/api\/v0\/me 200: the body does not match its schema:\n\s+\(root\) must have required property 'shoeSize'/,
    );
  });

  it("lets the test's own expectation speak first, and reports through .end() callbacks too", async () => {
    const http = agentWith((document) => delete responsesOf(document, ME, 'get')['200']);
    await expect(http.get(ME).set(owner.auth).expect(201).then()).rejects.toThrow('expected 201 "Created", got 200 "OK"');
    const error = await new Promise<Error | null>(
      (resolve) =>
        void http
          .get(ME)
          .set(owner.auth)
          .end((err) => resolve(err)),
    );
    expect(error?.message).toMatch(/the document does not list 200/);
  });

  it('holds a method a path does not have to the 405 the document promises', () => {
    const oracle = t.oracle();
    const body = { detail: 'PUT is not allowed on /api/v0/me; it answers GET, HEAD.', status: 405, title: 'Method Not Allowed', metadata: { code: 'x' } };
    expect(() => oracle.checkResponse('PUT', ME, 405, { 'content-type': 'application/json' }, body)).not.toThrow();
    expect(() => oracle.checkResponse('PUT', ME, 404, { 'content-type': 'application/json' }, body)).toThrow(/promises 405/);
    expect(() => oracle.checkResponse('PUT', ME, 405, { 'content-type': 'application/json' }, { status: 405 })).toThrow(/required property 'detail'/);
  });

  it('judges the document it holds, and leaves alone what it does not describe', () => {
    const oracle = t.oracle();
    const json = { 'content-type': 'application/json; charset=utf-8' };
    const invalid = { detail: 'd', status: 400, title: 'Bad Request', metadata: { code: 'validation_failed' } };
    expect(() => oracle.checkResponse('GET', `${MEMBERS}?limit=x`, 400, json, invalid)).not.toThrow();
    // The v0 error body is exactly what the server sends: a code always, and no analytics `requestId`.
    expect(() => oracle.checkResponse('GET', `${MEMBERS}?limit=x`, 400, json, { ...invalid, metadata: undefined })).toThrow(/required property 'metadata'/);
    expect(() => oracle.checkResponse('GET', `${MEMBERS}?limit=x`, 400, json, { ...invalid, requestId: 'req_1' })).toThrow(/additional properties/);
    expect(() => oracle.checkResponse('GET', MEMBERS, 200, json, { members: 'none' })).toThrow(/GET \/api\/v0\/organization\/members 200: the body/);
    expect(() => oracle.checkResponse('DELETE', '/api/v0/sessions/x', 204, json, { deleted: true })).toThrow(
      /answered application\/json; the document gives no body/,
    );
    expect(() => oracle.checkResponse('GET', '/settings/api-keys', 200, { 'content-type': 'text/html' }, '<html>')).not.toThrow();
    expect(() => oracle.checkResponse('GET', '/settings/api-keys', 500, { 'content-type': 'text/html' }, '<html>')).toThrow(/does not list 500/);
    expect(() => oracle.checkResponse('GET', '/', 200, { 'content-type': 'text/html' }, '<html>')).not.toThrow();
    expect(() => oracle.checkResponse('GET', '/api/v0/nothing', 500, json, {})).not.toThrow();
    const routeNotFound = { detail: 'No route matches GET /api/v0/me/x.', status: 404, title: 'Not Found', metadata: { code: 'route_not_found' } };
    expect(() => oracle.checkResponse('GET', `${MEMBERS}/x`, 404, json, routeNotFound)).not.toThrow();
    expect(() => oracle.checkResponse('GET', ME, 500, json, { detail: 'd', status: 500, title: 'Internal Server Error' })).toThrow(/does not list 500/);
  });

  it('checks nothing for a test that says why it sends what the document does not describe', async () => {
    const http = agentWith((document) => delete responsesOf(document, ME, 'get')['200']);
    await http.unchecked('proves the escape hatch').get(ME).set(owner.auth).expect(200);
    expect(() => http.unchecked(' ')).toThrow(/say why/);
  });
});
