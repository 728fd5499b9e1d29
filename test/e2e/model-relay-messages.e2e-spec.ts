import { request as httpRequest } from 'node:http';
import { TestApp } from '../utils/test-app';
import { json } from '../utils/recording-upstream';
import { expectInvalid, expectV0Error } from '../utils/v0-errors';
import { Auth, HEADER_SECRET, Json, KEY, modelRelayFixture } from '../utils/fixtures/model-relay';

/**
 * The model relay for custom models whose `provider` is `anthropic`: `/messages` sends the Messages API's request
 * with the key as `x-api-key`, each endpoint refuses the other API's models, and the rules of the chat completions
 * relay (what crosses, masking, streams) hold. A real local server stands in for the vendor.
 */
describe('Model relay, Anthropic messages (e2e)', () => {
  const fixture = modelRelayFixture();
  const { vendor, vendorUrl, setModels, relay, model } = fixture;
  let t: TestApp;
  let agent: Auth;
  beforeAll(() => ({ t, agent } = fixture));

  const anthropic = (extra: Json = {}) => model({ provider: 'anthropic', ...extra });
  const messages = (auth: Auth, body: Json = { max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, headers: Record<string, string> = {}) =>
    t.http().post('/api/v0/agent/models/m/messages').set(auth).set(headers).send(body);

  it('sends the Messages request to {baseUrl}/messages with the key as x-api-key and anthropic-version, and passes the answer back', async () => {
    await setModels([anthropic({ extraHeaders: { 'X-Vendor-Key': HEADER_SECRET }, maxOutputTokens: 2048, extraArgs: { metadata: { user_id: 'u' } } })]).expect(
      200,
    );
    vendor.script((_, res) =>
      json(
        res,
        200,
        { id: 'msg_1', type: 'message', content: [{ type: 'text', text: 'hello' }], usage: { input_tokens: 3, output_tokens: 1 } },
        { 'anthropic-ratelimit-requests-remaining': '99', 'request-id': 'req_1', server: 'x' },
      ),
    );
    const res = await messages(agent, { model: 'other', messages: [{ role: 'user', content: 'hi' }] }, { 'X-Caller': 'evil' }).expect(200);
    expect(res.body.content).toEqual([{ type: 'text', text: 'hello' }]);
    expect(res.headers).toMatchObject({ 'anthropic-ratelimit-requests-remaining': '99', 'request-id': 'req_1' });
    expect(res.headers.server).toBeUndefined();

    const [sent] = vendor.requests;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers).toMatchObject({ 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'x-vendor-key': HEADER_SECRET });
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.headers['x-caller']).toBeUndefined();
    expect(JSON.parse(sent.body)).toEqual({ metadata: { user_id: 'u' }, model: 'vendor-x', max_tokens: 2048, messages: [{ role: 'user', content: 'hi' }] });
  });

  it("adds /v1 to a baseUrl without a path, and keeps the caller's anthropic-version and anthropic-beta", async () => {
    await setModels([anthropic({ baseUrl: vendorUrl().replace(/\/v1$/, '') })]).expect(200);
    await messages(agent, undefined, { 'anthropic-version': '2024-01-01', 'anthropic-beta': 'some-beta-2025' }).expect(200);
    expect(vendor.requests[0].path).toBe('/v1/messages');
    expect(vendor.requests[0].headers).toMatchObject({ 'anthropic-version': '2024-01-01', 'anthropic-beta': 'some-beta-2025' });
  });

  it("answers 400 model_api_mismatch, sending nothing, when the endpoint is not the one of the model's provider", async () => {
    await setModels([anthropic()]).expect(200);
    const wrong = await relay(agent);
    expectV0Error(wrong, 400, 'model_api_mismatch');
    expect(wrong.body.detail).toMatch(/has provider anthropic: call \/api\/v0\/agent\/models\/m\/messages/);
    expect(wrong.body.metadata).toMatchObject({ customModelId: 'm', provider: 'anthropic', endpoint: 'messages' });

    await setModels([model()]).expect(200);
    const chat = await messages(agent);
    expectV0Error(chat, 400, 'model_api_mismatch');
    expect(chat.body.metadata).toMatchObject({ provider: 'generic-chat-completion-api', endpoint: 'chat/completions' });
    expect(vendor.requests).toEqual([]);
  });

  it('refuses what it refuses on chat completions: user credentials, unknown models, bodies that are not objects', async () => {
    await setModels([anthropic()]).expect(200);
    expectV0Error(await messages(fixture.owner.auth), 403, 'agent_token_required');
    expectV0Error(await t.http().post('/api/v0/agent/models/nope/messages').set(agent).send({ messages: [] }), 404, 'custom_model_not_found');
    expectV0Error(await t.http().post('/api/v0/agent/models/m/messages').set(agent).send([1, 2]), 400, 'validation_failed');
    expect(vendor.requests).toEqual([]);
  });

  it('takes only the two providers, and no x-api-key extra header beside the key of an Anthropic model', async () => {
    expectInvalid(await setModels([model({ provider: 'openai' })]), 'settings.customModels[0].provider');
    expectInvalid(await setModels([anthropic({ extraHeaders: { 'X-Api-Key': 'mine' } })]), 'settings.customModels[0].extraHeaders.X-Api-Key');
    await setModels([model({ extraHeaders: { 'X-Api-Key': 'mine' } })]).expect(200);
  });

  it('streams the events through as they come, the key masked', async () => {
    await setModels([anthropic()]).expect(200);
    vendor.script((_, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3}}}\n\n');
      res.end(`event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"your key is ${KEY}"}}\n\n`);
    });
    const url = new URL(await t.app.getUrl());
    const answer = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: url.port,
          path: '/api/v0/agent/models/m/messages',
          method: 'POST',
          headers: { ...agent, 'content-type': 'application/json' },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
    });
    expect(answer.status).toBe(200);
    expect(answer.type).toMatch(/^text\/event-stream/);
    expect(answer.body).toContain('event: message_start');
    expect(answer.body).toContain('your key is ****6789');
    expect(answer.body).not.toContain(KEY);
    expect(vendor.requests[0].headers.accept).toBe('text/event-stream, application/json');
  });

  it('passes a 529 and its retry-after back as the vendor answered them', async () => {
    await setModels([anthropic()]).expect(200);
    vendor.script((_, res) => json(res, 529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, { 'retry-after': '3' }));
    const res = await messages(agent);
    expect(res.status).toBe(529);
    expect(res.headers['retry-after']).toBe('3');
    expect(res.body.error.type).toBe('overloaded_error');
  });
});
