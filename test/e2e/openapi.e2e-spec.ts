import { startTestApp, TestApp } from '../utils/test-app';

interface Operation {
  security?: Array<Record<string, string[]>>;
  responses: Record<string, unknown>;
}

/** The OpenAPI document is the contract operators read: its decisions must be in it. */
describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: {
    info: { version: string; description: string };
    servers: Array<{ url: string }>;
    paths: Record<string, Record<string, Operation> & { servers?: Array<{ url: string }> }>;
    components: { securitySchemes: Record<string, { type: string; scheme: string }> };
  };

  beforeAll(async () => {
    t = await startTestApp({ BASE_URL: 'https://api.example.test', APP_URL: 'https://app.example.test' });
    doc = (await t.http().get('/docs-json')).body;
  });

  afterAll(() => t.close());

  it('reports the API version 0.1.0 and bearer security', () => {
    expect(doc.info.version).toBe('0.1.0');
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.servers[0].url).toBe('https://api.example.test');
  });

  it('states the decisions the spec leaves open', () => {
    for (const heading of ['## Roles', 'Token lifetime and JWT issuance', 'Rate limits', 'BODY_LIMIT_BYTES', '404', 'metadata.code', '## Sessions', 'Status transitions', '## Idempotency', 'text/plain', 'Unix ms']) {
      expect(doc.info.description).toContain(heading);
    }
  });

  it('documents every API key operation with its auth and error responses', () => {
    const keys = doc.paths['/settings/api-keys'];
    for (const operation of [keys.post, keys.get, doc.paths['/settings/api-keys/{apiKeyId}'].delete]) {
      expect(operation.security).toEqual([{ bearer: [] }]);
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['400', '401']));
    }
    expect(Object.keys(keys.post.responses)).toContain('201');
    expect(Object.keys(doc.paths['/settings/api-keys/{apiKeyId}'].delete.responses)).toContain('404');
  });

  it('places the web application’s endpoints on APP_URL and leaves /healthz public', () => {
    expect(doc.paths['/settings/api-keys'].servers).toEqual([{ url: 'https://app.example.test', description: '{app_url}' }]);
    expect(doc.paths['/healthz'].get.security).toBeUndefined();
  });
});
