import aws4 from 'aws4';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from '../utils/fixtures/sessions';
import { pdfOf } from '../utils/fixtures/pdf';
import { until } from '../utils/polling';
import { TestApp } from '../utils/test-app';
import { itInSandbox } from '../utils/sandbox';
import { agentProcessFixture, call, completion, Json, ScriptedModel } from '../utils/fixtures/agent-process';

/**
 * The reference agent as a real process, against the real server and a scripted model on loopback: what the
 * organization's controls and the session's settings let it do (custom models through the relay, spec mode,
 * autonomyLevel, the OS sandbox and networkPolicy).
 */
describe('The agent process', () => {
  const fixture = agentProcessFixture();
  const { computerWithAgent, say, setControls, untilIdle, messages, folders } = fixture;
  let t: TestApp;
  beforeAll(() => (t = fixture.t));

  it("uses the organization's custom model through the server's relay; its key never reaches the agent", async () => {
    const model: ScriptedModel = new ScriptedModel((request) =>
      // A vendor that quotes the key back in an error, as some do.
      request.echo
        ? { error: { message: `Incorrect API key provided: ${String(model.headers[model.headers.length - 1].authorization)}` } }
        : completion({ content: 'Hi from the team model.' }),
    );
    const modelUrl = await model.start();
    try {
      const { computerId, token, output } = await computerWithAgent({});
      const secret = 'sk-team-secret-1234567890';
      const customModels = [
        {
          id: 'team-model',
          model: 'vendor-x',
          baseUrl: modelUrl,
          apiKey: secret,
          extraHeaders: { 'x-team': 'blue' },
          extraArgs: { temperature: 0.2 },
          maxOutputTokens: 256,
        },
      ];
      await setControls({ customModels });
      const sessionId = await say(computerId, 'Hello');
      const session = await untilIdle(sessionId, output);
      const all = await messages(sessionId);
      expect(all.map((m) => [m.role, m.modelId ?? null])).toEqual([
        ['user', null],
        ['assistant', 'team-model'],
      ]);
      expect(all[1].content).toEqual([{ type: 'text', text: 'Hi from the team model.' }]);
      expect(session.sessionSettings.tokenUsage).toMatchObject({ inputTokens: 120, outputTokens: 30 });
      expect(model.requests[0]).toMatchObject({ model: 'vendor-x', temperature: 0.2, max_tokens: 256 });
      expect(model.requests[0].tools).toHaveLength(11);
      expect(model.headers[0]).toMatchObject({ authorization: `Bearer ${secret}`, 'x-team': 'blue' });
      expect(output()).not.toContain(secret);

      // The relay itself: the caller's model policy applies, unknown models are 404, and the vendor's answer passes through.
      const relay = (id: string) =>
        t
          .http()
          .post(`/api/v0/agent/models/${id}/chat/completions`)
          .set({ Authorization: `Bearer ${token}` });
      const ok = await relay('team-model')
        .send({ messages: [{ role: 'user', content: 'hi' }] })
        .expect(200);
      expect(ok.body.choices[0].message.content).toBe('Hi from the team model.');
      expect(JSON.stringify(ok.body)).not.toContain(secret);
      const quoted = await relay('team-model').send({ echo: true, messages: [] }).expect(200);
      expect(quoted.body.error.message).toBe('Incorrect API key provided: Bearer ****7890');
      expect((await relay('no-such-model').send({ messages: [] }).expect(404)).body.metadata.code).toBe('custom_model_not_found');
      expect((await relay('team-model').send([1, 2]).expect(400)).body.detail).toMatch(/body: must be a JSON object/);
      await setControls({ modelPolicy: { blockedModelIds: ['team-model'] } });
      const blocked = await relay('team-model').send({ messages: [] }).expect(403);
      expect(blocked.body.metadata).toMatchObject({ code: 'model_not_allowed', rule: 'modelPolicy.blockedModelIds' });
      await model.stop();
      await setControls({ modelPolicy: { blockedModelIds: [] } });
      expect((await relay('team-model').send({ messages: [] }).expect(503)).body.metadata.code).toBe('model_unreachable');
    } finally {
      await model.stop().catch(() => undefined);
    }
  });

  it('keeps fast models out while modelPolicy.isFastModelsAllowed is off: the relay sends neither a fast model nor a request for fast processing, and no session names one', async () => {
    const model = new ScriptedModel(() => completion({ content: 'Hi.' }));
    const modelUrl = await model.start();
    try {
      const { owner, computerId, token } = await computerWithAgent({});
      await setControls({
        customModels: [
          { id: 'team', model: 'vendor-x', baseUrl: modelUrl, apiKey: 'sk-team-1' },
          { id: 'quick', model: 'vendor-x-fast', baseUrl: modelUrl, apiKey: 'sk-team-1' },
          { id: 'priority', model: 'vendor-x', baseUrl: modelUrl, apiKey: 'sk-team-1', extraArgs: { service_tier: 'priority' } },
        ],
        modelPolicy: { isFastModelsAllowed: false },
      });
      const relay = (id: string, body: Json) =>
        t
          .http()
          .post(`/api/v0/agent/models/${id}/chat/completions`)
          .set({ Authorization: `Bearer ${token}` })
          .send(body);
      const ask = { messages: [{ role: 'user', content: 'hi' }] };
      for (const [id, body] of [
        ['quick', ask],
        ['priority', ask],
        ['team', { ...ask, speed: 'fast' }],
        ['team', { ...ask, service_tier: 'priority' }],
      ] as const) {
        const refused = await relay(id, body).expect(403);
        expect(refused.body.metadata).toMatchObject({ code: 'model_not_allowed', rule: 'modelPolicy.isFastModelsAllowed', model: id });
      }
      expect(model.requests).toHaveLength(0);
      const created = await t
        .http()
        .post('/api/v0/sessions')
        .set(owner.auth)
        .send({ computerId, sessionSettings: { model: 'quick' } })
        .expect(403);
      expect(created.body.metadata).toMatchObject({ rule: 'modelPolicy.isFastModelsAllowed', field: 'sessionSettings.model' });
      expect((await relay('team', ask).expect(200)).body.choices[0].message.content).toBe('Hi.');

      await setControls({ modelPolicy: { isFastModelsAllowed: true } });
      await relay('quick', ask).expect(200);
      await relay('team', { ...ask, speed: 'fast' }).expect(200);
      expect(model.requests.slice(-2)).toMatchObject([{ model: 'vendor-x-fast' }, { model: 'vendor-x', speed: 'fast' }]);
    } finally {
      await model.stop();
    }
  });

  it('reaches a custom model with cloudModelConfig from the computer, signed with the cloud credentials its commands give, and signs in again when they are refused', async () => {
    let refuseNext = true;
    const model = new ScriptedModel(() => {
      if (refuseNext) {
        refuseNext = false;
        return { status: 403, body: { message: 'The security token included in the request is expired' } };
      }
      return completion({ content: 'Hi from Bedrock.' });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, token, workspace, output } = await computerWithAgent({});
      const secretKey = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
      // The export prints AWS credential-process JSON, and says which profile and region it ran under; the sign-in leaves a mark.
      const exportCommand =
        `echo "$AWS_PROFILE $AWS_REGION" >> exports.log && ` +
        `printf '{"Version":1,"AccessKeyId":"AKIDEXAMPLE","SecretAccessKey":"%s","SessionToken":"session-%s","Expiration":"2999-01-01T00:00:00Z"}' '${secretKey}' "$(wc -l < exports.log | tr -d ' ')"`;
      await setControls({
        customModels: [
          {
            id: 'bedrock',
            model: 'anthropic.claude-opus-5',
            baseUrl: 'https://relay-unused.example.com/v1',
            cloudModelConfig: {
              cloudBaseUrl: modelUrl,
              cloudRegion: 'eu-west-1',
              cloudProfile: 'team-prod',
              cloudCredentialExport: exportCommand,
              cloudAuthRefresh: 'echo signed-in >> sign-ins.log',
            },
          },
          { id: 'plain', model: 'vendor-x', baseUrl: modelUrl },
        ],
      });
      // The agent policy masks the commands; only the agent's own call reveals them.
      const policy = await t
        .http()
        .get('/api/v0/agent/policy')
        .set({ Authorization: `Bearer ${token}` })
        .expect(200);
      expect(policy.body.customModels[0].cloudModelConfig).toMatchObject({ cloudBaseUrl: modelUrl, cloudCredentialExport: expect.stringMatching(/^\*{4}/) });
      expect(JSON.stringify(policy.body)).not.toContain(secretKey);
      await t.http().get('/api/v0/agent/models/bedrock/cloud').set(owner.auth).expect(403);
      const asAgent = (id: string) =>
        t
          .http()
          .get(`/api/v0/agent/models/${id}/cloud`)
          .set({ Authorization: `Bearer ${token}` });
      expect((await asAgent('plain').expect(409)).body.metadata.code).toBe('model_not_cloud');
      expect((await asAgent('nope').expect(404)).body.metadata.code).toBe('custom_model_not_found');

      const sessionId = await say(computerId, 'Hello', { model: 'bedrock' });
      await untilIdle(sessionId, output);
      const all = await messages(sessionId);
      expect(all.map((m) => [m.role, m.modelId ?? null])).toEqual([
        ['user', null],
        ['assistant', 'bedrock'],
      ]);
      expect(all[1].content).toEqual([{ type: 'text', text: 'Hi from Bedrock.' }]);
      // Refused once: signed in again, exported again, and the second request carried the new credentials.
      expect(readFileSync(join(workspace, 'sign-ins.log'), 'utf8')).toBe('signed-in\n');
      expect(readFileSync(join(workspace, 'exports.log'), 'utf8')).toBe('team-prod eu-west-1\nteam-prod eu-west-1\n');
      expect(model.requests).toHaveLength(2);
      expect(model.requests[1]).toMatchObject({ model: 'anthropic.claude-opus-5' });
      const headers = model.headers[1];
      expect(headers['x-amz-security-token']).toBe('session-2');
      expect(headers.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/bedrock\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/,
      );
      // The signature is right for this very request: signed again from its parts, it comes out the same.
      const url = new URL(modelUrl);
      const again = aws4.sign(
        {
          host: String(headers.host),
          path: `${url.pathname}/chat/completions`,
          method: 'POST',
          service: 'bedrock',
          region: 'eu-west-1',
          headers: { 'content-type': 'application/json', 'x-amz-date': String(headers['x-amz-date']) },
          body: model.bodies[1],
        },
        { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: secretKey, sessionToken: 'session-2' },
      );
      expect(again.headers!.Authorization).toBe(headers.authorization);
      expect(output()).not.toContain(secretKey);
      expect(JSON.stringify(all)).not.toContain(secretKey);
    } finally {
      await model.stop();
    }
  });

  it("routes a session whose model is router: a routing call by the organization's guidance and rules picks the model of each turn, and the session says which and why", async () => {
    const routing: Json[] = [];
    const model = new ScriptedModel((request) => {
      const system = String((request.messages[0] as Json).content);
      if (system.startsWith('You are a model router')) {
        routing.push(request);
        const ask = String((request.messages[1] as Json).content);
        return completion({
          content: JSON.stringify(/bug/.test(ask) ? { model: 'coder', reason: 'the request is about code' } : { model: 'writer', reason: 'prose' }),
        });
      }
      return completion({ content: `Answered by ${String(request.model)}.` });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const customModels = [
        { id: 'coder', model: 'vendor-coder', baseUrl: modelUrl, apiKey: 'sk-coder-0000', useInRouter: true, baseModelId: 'big-code-1', displayName: 'Coder' },
        { id: 'writer', model: 'vendor-writer', baseUrl: modelUrl, apiKey: 'sk-writer-0000', useInRouter: true },
        { id: 'unrouted', model: 'vendor-unrouted', baseUrl: modelUrl, apiKey: 'sk-unrouted-0000' },
      ];
      await setControls({
        customModels,
        modelPolicy: { allowServiceRouterByok: true },
        serviceRouterGuidance: 'Prefer the cheapest model that can do the job.',
        serviceRouterRules: [{ when: 'the request is about code', guidance: 'use coder' }],
      });
      const session = await t
        .http()
        .post('/api/v0/sessions')
        .set(owner.auth)
        .send({ computerId, sessionSettings: { model: 'router' } })
        .expect(201);
      const sessionId = session.body.sessionId as string;
      const turn = async (text: string) => {
        await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text }).expect(200);
        await untilIdle(sessionId, output);
        return (await messages(sessionId))
          .slice(-2)
          .map((m) => `${String(m.role)}${m.modelId ? ` ${String(m.modelId)}` : ''}: ${String(((m.content as Json[])[0] as Json).text)}`);
      };
      expect(await turn('Fix the bug in the parser')).toEqual([
        'system: The model router chose Coder (coder) for this turn: the request is about code',
        'assistant coder: Answered by vendor-coder.',
      ]);
      expect(await turn('Write release notes')).toEqual([
        'system: The model router chose writer for this turn: prose',
        'assistant writer: Answered by vendor-writer.',
      ]);
      // The routing call (to the agent's own model) read the candidates, the guidance and the rules.
      expect(routing.map((r) => r.model)).toEqual(['scripted-1', 'scripted-1']);
      const prompt = String((routing[0].messages[0] as Json).content);
      expect(prompt).toContain('- coder (named Coder; based on big-code-1)');
      expect(prompt).not.toContain('unrouted');
      expect(prompt).toContain('Guidance: Prefer the cheapest model that can do the job.');
      expect(prompt).toContain('- When the request is about code: use coder');

      // Without allowServiceRouterByok the organization's own models are not the router's: the agent's model alone, no routing call.
      await setControls({ modelPolicy: { allowServiceRouterByok: false } });
      expect(await turn('Fix another bug')).toEqual([
        'system: The model router chose scripted-1 for this turn: the only model the router may use',
        'assistant scripted-1: Answered by scripted-1.',
      ]);
      expect(routing).toHaveLength(2);
      // The router may change provider from turn to turn: a routed session is never locked.
      const routedSession = (await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body as Json;
      expect(routedSession.sessionSettings).not.toHaveProperty('providerLock');
    } finally {
      await model.stop();
    }
  });

  it("gives a PDF a user attaches to a Chat Completions model as its text: the sender's parsedData, else the text the agent reads from it", async () => {
    const model = new ScriptedModel(() => completion({ content: 'Read it.' }));
    const modelUrl = await model.start();
    try {
      const { owner, computerId, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const pdf = pdfOf('Invoices are due in 30 days.').toString('base64');
      const sent = async (file: Json) => {
        const session = await t.http().post('/api/v0/sessions').set(owner.auth).send({ computerId }).expect(201);
        const sessionId = session.body.sessionId as string;
        await t
          .http()
          .post(`/api/v0/sessions/${sessionId}/messages`)
          .set(owner.auth)
          .send({ text: 'What are the terms?', files: [file] })
          .expect(200);
        await untilIdle(sessionId, output);
        return (model.requests.at(-1)!.messages as Json[]).at(-1)!;
      };
      expect(await sent({ type: 'base64', mediaType: 'application/pdf', data: pdf, name: 'terms.pdf' })).toEqual({
        role: 'user',
        content: 'What are the terms?\n\n[the attached PDF terms.pdf (1 page), as text]\nInvoices are due in 30 days.',
      });
      expect(await sent({ type: 'base64', mediaType: 'application/pdf', data: pdf, name: 'terms.pdf', parsedData: 'Net 30.' })).toEqual({
        role: 'user',
        content: 'What are the terms?\n\n[the attached PDF terms.pdf, as text]\nNet 30.',
      });
    } finally {
      await model.stop();
    }
  });

  it('shows an image file the model reads to it, and only describes it to a model marked noImageSupport; the session keeps the description', async () => {
    const model = new ScriptedModel((request) => {
      const last = (request.messages as Json[]).at(-1)!;
      if (last.role === 'user' && last.content === 'Look at the screenshot.')
        return completion({ tool_calls: [call('r1', 'Read', { file_path: 'shot.png' })] });
      return completion({ content: 'Seen.' });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, output } = await computerWithAgent({});
      mkdirSync(workspace, { recursive: true });
      writeFileSync(join(workspace, 'shot.png'), Buffer.from(PNG, 'base64'));
      await setControls({
        customModels: [
          { id: 'seeing', model: 'vendor-seeing', baseUrl: modelUrl, apiKey: 'sk-seeing-0000' },
          { id: 'blind', model: 'vendor-blind', baseUrl: modelUrl, apiKey: 'sk-blind-0000', noImageSupport: true },
        ],
      });
      const afterRead = async (modelId: string) => {
        const sessionId = await say(computerId, 'Look at the screenshot.', { model: modelId });
        await untilIdle(sessionId, output);
        return { sent: (model.requests.at(-1)!.messages as Json[]).slice(-2), stored: await messages(sessionId) };
      };
      const seeing = await afterRead('seeing');
      expect(seeing.sent).toEqual([
        { role: 'tool', tool_call_id: 'r1', content: 'shot.png: an image (image/png, 0 KB), shown to you beside this result.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'The images of the tool results above (r1):' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
          ],
        },
      ]);
      expect(JSON.stringify(seeing.stored)).not.toContain(PNG);
      const blind = await afterRead('blind');
      expect(blind.sent[1]).toMatchObject({ role: 'tool', content: expect.stringContaining("blind takes no images (the organization's noImageSupport)") });
      expect(JSON.stringify(blind.sent)).not.toContain(PNG);
    } finally {
      await model.stop();
    }
  });

  it('shows the images of a message to a model that takes them, and describes them in words to one marked noImageSupport', async () => {
    const model = new ScriptedModel(() => completion({ content: 'Seen.' }));
    const modelUrl = await model.start();
    try {
      const { owner, computerId, output } = await computerWithAgent({});
      const customModels = [
        { id: 'seeing', model: 'vendor-seeing', baseUrl: modelUrl, apiKey: 'sk-seeing-0000' },
        { id: 'blind', model: 'vendor-blind', baseUrl: modelUrl, apiKey: 'sk-blind-0000', noImageSupport: true },
      ];
      await setControls({ customModels });
      const userMessageSent = async (modelId: string) => {
        const session = await t
          .http()
          .post('/api/v0/sessions')
          .set(owner.auth)
          .send({ computerId, sessionSettings: { model: modelId } })
          .expect(201);
        const sessionId = session.body.sessionId as string;
        await t
          .http()
          .post(`/api/v0/sessions/${sessionId}/messages`)
          .set(owner.auth)
          .send({ text: 'What is on this screenshot?', images: [{ type: 'base64', mediaType: 'image/png', data: PNG }] })
          .expect(200);
        await untilIdle(sessionId, output);
        return (model.requests.at(-1)!.messages as Json[]).at(-1)!;
      };
      expect(await userMessageSent('seeing')).toEqual({
        role: 'user',
        content: [
          { type: 'text', text: 'What is on this screenshot?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        ],
      });
      const described = await userMessageSent('blind');
      expect(described).toEqual({
        role: 'user',
        content: expect.stringMatching(
          /^What is on this screenshot\?\n\n\[an image is attached \(image\/png, 0 KB\); blind takes no images \(the organization's noImageSupport\)/,
        ),
      });
      expect(JSON.stringify(described)).not.toContain(PNG);
    } finally {
      await model.stop();
    }
  });

  it("compacts by the custom model's maxContextLimit, not one size for every model", async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      return completion({ content: String(last.content).startsWith('Summarise the conversation so far') ? 'SUMMARY: a long note.' : 'Done.' });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, output } = await computerWithAgent({});
      const customModels = [
        { id: 'small', model: 'vendor-small', baseUrl: modelUrl, apiKey: 'sk-small-0000', maxContextLimit: 1500 },
        { id: 'large', model: 'vendor-large', baseUrl: modelUrl, apiKey: 'sk-large-0000' },
      ];
      await setControls({ customModels });
      const note = `Keep this note: ${'n'.repeat(5_000)}`;
      const turnOn = async (modelId: string) => {
        const sessionId = await say(computerId, note, { model: modelId });
        await untilIdle(sessionId, output);
        return (await messages(sessionId)).filter((m) => m.role === 'system').map((m) => ((m.content as Json[])[0] as Json).text);
      };
      // 1,500 tokens of context: about 4,500 characters before compacting, which the note passes.
      expect(await turnOn('small')).toEqual([expect.stringMatching(/^The conversation had grown past 4500 characters, so it was compacted/)]);
      expect(model.requests.map((r) => r.model)).toEqual(['vendor-small', 'vendor-small']);
      expect(await turnOn('large')).toEqual([]);
      expect(model.requests.slice(2).map((r) => r.model)).toEqual(['vendor-large']);
    } finally {
      await model.stop();
    }
  });

  it("follows the session's settings: the custom model it names, and in spec mode only the tools that change nothing", async () => {
    const planner = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role === 'user') return completion({ tool_calls: [call('p1', 'Create', { file_path: 'plan.txt', content: 'x' }), call('p2', 'LS', {})] });
      return completion({ content: 'SPEC: add plan.txt.' });
    });
    const coder = new ScriptedModel(() => completion({ content: 'Coded.' }));
    const [plannerUrl, coderUrl] = [await planner.start(), await coder.start()];
    try {
      const { owner, computerId, workspace, output } = await computerWithAgent({});
      const customModels = [
        { id: 'coder', model: 'vendor-c', baseUrl: coderUrl, apiKey: 'sk-coder-0000000000' },
        { id: 'planner', model: 'vendor-p', baseUrl: plannerUrl, apiKey: 'sk-planner-000000000' },
      ];
      await setControls({ customModels });
      const sessionId = await say(computerId, 'Plan a plan.txt', { model: 'coder', specModeModel: 'planner', interactionMode: 'spec' });
      await untilIdle(sessionId, output);

      // Spec mode: the spec model, told to plan, offered the read-only tools (and Task); a change it asks for anyway is refused.
      expect(coder.requests).toHaveLength(0);
      expect(planner.requests[0].tools.map((tool: Json) => tool.function.name)).toEqual(['Read', 'LS', 'Glob', 'Grep', 'WebFetch', 'TodoWrite', 'Task']);
      expect(planner.requests[0].messages[0].content).toMatch(/spec mode/);
      const results = (await messages(sessionId)).find((m) => m.role === 'tool')!;
      expect(results.content[0]).toMatchObject({ toolUseId: 'p1', isError: true, content: expect.stringMatching(/^Create is not available in spec mode/) });
      expect(results.content[1]).toMatchObject({ toolUseId: 'p2', isError: false });
      expect(existsSync(join(workspace, 'plan.txt'))).toBe(false);

      // Out of spec mode: the session's model, with every tool.
      await t
        .http()
        .patch(`/api/v0/sessions/${sessionId}`)
        .set(owner.auth)
        .send({ sessionSettings: { interactionMode: 'auto' } })
        .expect(200);
      await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Go ahead' }).expect(200);
      await untilIdle(sessionId, output);
      expect(coder.requests).toHaveLength(1);
      expect(coder.requests[0]).toMatchObject({ model: 'vendor-c' });
      expect(coder.requests[0].tools).toHaveLength(11);
      expect(coder.requests[0].messages[0].content).not.toMatch(/spec mode/);
      const last = (await messages(sessionId)).pop()!;
      expect(last).toMatchObject({ role: 'assistant', modelId: 'coder', content: [{ type: 'text', text: 'Coded.' }] });
    } finally {
      await planner.stop();
      await coder.stop();
    }
  });

  it("keeps to the session's autonomyLevel: at low, file edits and commands that read, not a command that changes things", async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role !== 'user') return completion({ content: 'Done.' });
      return completion({
        tool_calls: [
          call('c1', 'Create', { file_path: 'a.txt', content: 'a\n' }),
          call('c2', 'Execute', { command: 'ls' }),
          call('c3', 'Execute', { command: 'touch b.txt' }),
        ],
      });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const sessionId = await say(computerId, 'Write and touch', { autonomyLevel: 'low' });
      await untilIdle(sessionId, output);
      const [created, listed, touched] = (await messages(sessionId)).find((m) => m.role === 'tool')!.content as Json[];
      expect(created).toMatchObject({ isError: false });
      expect(listed).toMatchObject({ isError: false, content: 'a.txt\n[exit code 0]' });
      expect(touched).toMatchObject({
        isError: true,
        content: expect.stringMatching(/^Refused by the session's autonomyLevel low: it runs only commands that read/),
      });
      expect(existsSync(join(workspace, 'b.txt'))).toBe(false);
    } finally {
      await model.stop();
    }
  });

  it('judges its own model by the same modelPolicy rule as the server, and never answers a session with a model it did not ask for', async () => {
    const model = new ScriptedModel(() => completion({ content: 'Answered.' }));
    const modelUrl = await model.start();
    try {
      const { computerId, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const policy = (modelPolicy: Json) => setControls({ modelPolicy });
      const turn = async (sessionSettings: Json = {}) => {
        const sessionId = await say(computerId, 'Hi', sessionSettings);
        await untilIdle(sessionId, output);
        const last = (await messages(sessionId)).at(-1)!;
        return `${String(last.role)}: ${String(((last.content as Json[])[0] as Json).text)}`;
      };
      // allowedModelIds lists models to opt in to; with allowAllServiceModels on, others stay allowed (the agent read it as "only these").
      await policy({ allowAllServiceModels: true, allowedModelIds: ['another-model'] });
      expect(await turn()).toBe('assistant: Answered.');
      await policy({ allowAllServiceModels: false, allowedModelIds: ['another-model'] });
      expect(await turn()).toMatch(
        /^system: Model "scripted-1" is not in the allowed models of the organization's model policy \(modelPolicy\.allowedModelIds\)/,
      );
      await policy({ allowAllServiceModels: true, allowedModelIds: [], requireExplicitOptInModelIds: ['scripted-1'] });
      expect(await turn()).toMatch(/^system: Model "scripted-1" needs explicit opt-in \(modelPolicy\.requireExplicitOptInModelIds\)/);
      await policy({ requireExplicitOptInModelIds: [] });
      const requests = model.requests.length;
      expect(await turn({ model: 'model-the-agent-lacks' })).toMatch(
        /^system: This session asks for the model model-the-agent-lacks \(sessionSettings\.model\), which this agent cannot reach/,
      );
      expect(model.requests).toHaveLength(requests);
      expect(await turn({ model: 'scripted-1' })).toBe('assistant: Answered.');
    } finally {
      await model.stop();
    }
  });

  it('in interactionMode ask, waits for a person before every call that can change something; unattended, asks no one and runs none of them', async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role !== 'user') return completion({ content: 'Done.' });
      return completion({ tool_calls: [call('c1', 'LS', { path: '.' }), call('c2', 'Create', { file_path: 'asked.txt', content: 'x\n' })] });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const start = async (sessionSettings: Json) => {
        const sessionId = await say(computerId, 'Make a file', sessionSettings);
        return sessionId;
      };
      const approvals = async (sessionId: string) =>
        (await t.http().get(`/api/v0/sessions/${sessionId}/tool-approvals`).set(owner.auth).expect(200)).body.toolApprovals as Json[];

      const asked = await start({ interactionMode: 'ask' });
      const [pending] = await until(
        () => approvals(asked),
        (list) => list.length > 0,
        'the Create call to wait for approval',
        20_000,
      );
      expect(pending).toMatchObject({ toolName: 'Create', status: 'pending' });
      expect(existsSync(join(workspace, 'asked.txt'))).toBe(false);
      await t
        .http()
        .post(`/api/v0/sessions/${asked}/tool-approvals/${String(pending.approvalId)}`)
        .set(owner.auth)
        .send({ decision: 'allow' })
        .expect(200);
      await untilIdle(asked, output);
      expect(readFileSync(join(workspace, 'asked.txt'), 'utf8')).toBe('x\n');
      // LS, called first, reads only: it ran without asking (the first call to wait was Create's).
      expect(((await messages(asked)).find((m) => m.role === 'tool')!.content as Json[]).map((r) => r.isError)).toEqual([false, false]);

      const unattended = await start({ interactionMode: 'ask', autonomyMode: 'unattended' });
      writeFileSync(join(workspace, 'asked.txt'), 'before\n');
      await untilIdle(unattended, output);
      const [listed, created] = (await messages(unattended)).find((m) => m.role === 'tool')!.content as Json[];
      expect(listed).toMatchObject({ isError: false });
      expect(created).toMatchObject({
        isError: true,
        content: expect.stringMatching(/^Not run: the session's interactionMode is ask: .*, and this session runs unattended/),
      });
      expect(await approvals(unattended)).toEqual([]);
      expect(readFileSync(join(workspace, 'asked.txt'), 'utf8')).toBe('before\n');
    } finally {
      await model.stop();
    }
  });

  it('keeps a session to its providerLock and apiProviderLock: a model of another provider or API is refused before anything is sent', async () => {
    const model = new ScriptedModel(() => completion({ content: 'Answered.' }));
    const modelUrl = await model.start();
    try {
      const { owner, computerId, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const turn = async (sessionSettings: Json) => {
        const sessionId = await say(computerId, 'Hi', sessionSettings);
        await untilIdle(sessionId, output);
        const last = (await messages(sessionId)).at(-1)!;
        return `${String(last.role)}: ${String(((last.content as Json[])[0] as Json).text)}`;
      };
      // The agent's own model speaks Chat Completions as generic-chat-completion-api.
      expect(await turn({ providerLock: 'custom' })).toMatch(
        /^system: This session is locked to custom \(sessionSettings\.providerLock\), and the model it would use is reached as generic-chat-completion-api\. Nothing was sent/,
      );
      expect(await turn({ apiProviderLock: 'messages' })).toMatch(/^system: This session is locked to messages \(sessionSettings\.apiProviderLock\)/);
      expect(model.requests).toHaveLength(0);
      expect(await turn({ providerLock: 'generic-chat-completion-api', apiProviderLock: 'chat-completions' })).toBe('assistant: Answered.');

      // A session with no lock is locked at its first turn to the provider and API it started with, and kept there.
      const customModels = [{ id: 'team', model: 'vendor-team', baseUrl: modelUrl, apiKey: 'sk-team-0000' }];
      await setControls({ customModels });
      const session = await t.http().post('/api/v0/sessions').set(owner.auth).send({ computerId }).expect(201);
      const sessionId = session.body.sessionId as string;
      await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'First' }).expect(200);
      const locked = await untilIdle(sessionId, output);
      expect(locked.sessionSettings).toMatchObject({
        providerLock: 'generic-chat-completion-api',
        apiProviderLock: 'chat-completions',
        providerLockTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
      await t
        .http()
        .patch(`/api/v0/sessions/${sessionId}`)
        .set(owner.auth)
        .send({ sessionSettings: { model: 'team' } })
        .expect(200);
      await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Second' }).expect(200);
      await untilIdle(sessionId, output);
      const last = (await messages(sessionId)).at(-1)!;
      expect(((last.content as Json[])[0] as Json).text).toMatch(
        /^This session is locked to generic-chat-completion-api \(sessionSettings\.providerLock\), and the model it would use is reached as custom/,
      );
    } finally {
      await model.stop();
    }
  });

  it("offers only the session's enabledToolIds less its disabledToolIds, and refuses a call to any other tool the model names", async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role !== 'user') return completion({ content: 'Done.' });
      return completion({
        tool_calls: [
          call('c1', 'Execute', { command: 'touch pwned.txt' }),
          call('c2', 'Create', { file_path: 'made.txt', content: 'x\n' }),
          call('c3', 'LS', { path: '.' }),
          call('c4', 'Task', { description: 'look', prompt: 'Run touch sub.txt' }),
        ],
      });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      const sessionSettings = { enabledToolIds: ['ls', 'Create', 'Read'], disabledToolIds: ['create'] };
      const sessionId = await say(computerId, 'Try everything', sessionSettings);
      await untilIdle(sessionId, output);
      const offered = (model.requests[0].tools as Json[]).map((tool) => (tool.function as Json).name);
      expect(offered).toEqual(['Read', 'LS']);
      const [execute, create, ls, task] = (await messages(sessionId)).find((m) => m.role === 'tool')!.content as Json[];
      expect(execute).toMatchObject({
        isError: true,
        content: expect.stringMatching(/^Execute is not among the tools this session enables \(its enabledToolIds\)/),
      });
      expect(create).toMatchObject({ isError: true, content: expect.stringMatching(/^Create is disabled in this session \(its disabledToolIds\)/) });
      expect(ls).toMatchObject({ isError: false });
      expect(task).toMatchObject({ isError: true, content: expect.stringMatching(/^Task is not among the tools/) });
      for (const file of ['pwned.txt', 'made.txt', 'sub.txt']) expect(existsSync(join(workspace, file))).toBe(false);
      expect(model.requests).toHaveLength(2);
    } finally {
      await model.stop();
    }
  });

  it("keeps its file tools to the organization's sandbox.filesystem: a denyRead file is neither read nor found, a denyWrite one not changed", async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role !== 'user') return completion({ content: 'Done.' });
      return completion({
        tool_calls: [
          call('c1', 'Read', { file_path: 'config/.env' }),
          call('c2', 'Grep', { pattern: 'sk-live' }),
          call('c3', 'Edit', { file_path: 'ci/deploy.yml', old_str: 'prod', new_str: 'attacker' }),
        ],
      });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      mkdirSync(join(workspace, 'config'), { recursive: true });
      mkdirSync(join(workspace, 'ci'), { recursive: true });
      writeFileSync(join(workspace, 'config/.env'), 'STRIPE_KEY=sk-live-4242\n');
      writeFileSync(join(workspace, 'ci/deploy.yml'), 'target: prod\n');
      await setControls({ sandbox: { filesystem: { denyRead: ['**/.env'], denyWrite: ['ci'] } } });
      const sessionId = await say(computerId, 'Find the key');
      await untilIdle(sessionId, output);
      const [readResult, grepResult, editResult] = (await messages(sessionId)).find((m) => m.role === 'tool')!.content as Json[];
      expect(readResult).toMatchObject({ isError: true, content: expect.stringContaining('sandbox.filesystem.denyRead keeps it from the agent') });
      expect(grepResult).toMatchObject({ isError: false, content: expect.stringMatching(/^No matches for "sk-live"\n\[1 entry left out/) });
      expect(editResult).toMatchObject({ isError: true, content: expect.stringContaining('sandbox.filesystem.denyWrite keeps it from the agent') });
      expect(JSON.stringify(model.requests)).not.toContain('sk-live-4242');
      expect(readFileSync(join(workspace, 'ci/deploy.yml'), 'utf8')).toBe('target: prod\n');
    } finally {
      await model.stop();
    }
  });

  it('signs the commits it makes with a Co-authored-by trailer while includeCoAuthoredByAgent is on, and with none once it is off', async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role !== 'user') return completion({ content: 'Committed.' });
      const message = String(last.content);
      return completion({
        tool_calls: [
          call('c1', 'Execute', { command: `echo x >> a.txt && git add a.txt && git -c user.email=dev@example.com -c user.name=Dev commit -qm "${message}"` }),
        ],
      });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      mkdirSync(workspace, { recursive: true });
      execFileSync('git', ['init', '-q'], { cwd: workspace });
      const lastCommit = () => execFileSync('git', ['log', '-1', '--format=%B'], { cwd: workspace, encoding: 'utf8' }).trim();
      await untilIdle(await say(computerId, 'First change'), output);
      expect(lastCommit()).toBe('First change\n\nCo-authored-by: Agent Platform <agent@agent-platform.invalid>');
      await setControls({ includeCoAuthoredByAgent: false });
      await untilIdle(await say(computerId, 'Second change'), output);
      expect(lastCommit()).toBe('Second change');
    } finally {
      await model.stop();
    }
  });

  it('with enableAgentShield on (the default), redacts credentials from tool output before the model or the session sees them, and stops a commit adding one', async () => {
    // Built at run time, so that no scanner of this repository flags the test value.
    const token = ['ghp', 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'].join('_');
    const gitCommit = 'git add . && git -c user.email=dev@example.com -c user.name=Dev commit -qm "Add config"';
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role !== 'user') return completion({ content: 'Done.' });
      return completion({
        tool_calls: [call('c1', 'Read', { file_path: 'config.txt' }), call('c2', 'Execute', { command: `cat config.txt; ${gitCommit}` })],
      });
    });
    const modelUrl = await model.start();
    try {
      const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      mkdirSync(workspace, { recursive: true });
      execFileSync('git', ['init', '-q'], { cwd: workspace });
      writeFileSync(join(workspace, 'config.txt'), `GITHUB_TOKEN=${token}\n`);
      const toolResults = async (sessionId: string) => (await messages(sessionId)).find((m) => m.role === 'tool')!.content as Json[];
      const commits = () => execFileSync('git', ['log', '--all', '--format=%s'], { cwd: workspace, encoding: 'utf8' }).trim();

      const shielded = await say(computerId, 'Show the config and commit it');
      await untilIdle(shielded, output);
      const [read, executed] = await toolResults(shielded);
      expect(read.content).toMatch(/GITHUB_TOKEN=\[REDACTED GITHUB_TOKEN\][^]*Agent Shield \(the organization's enableAgentShield\) redacted a credential/);
      expect(executed).toMatchObject({ isError: true, content: expect.stringContaining('Agent Shield (the organization') });
      expect(executed.content).toMatch(/config\.txt:1: GITHUB_TOKEN/);
      expect(JSON.stringify(model.requests)).not.toContain(token);
      expect(JSON.stringify(await messages(shielded))).not.toContain(token);
      expect(commits()).toBe('');

      await setControls({ enableAgentShield: false });
      const open = await say(computerId, 'Again, without the shield');
      await untilIdle(open, output);
      expect((await toolResults(open))[0].content).toContain(token);
      expect(commits()).toBe('Add config');
    } finally {
      await model.stop();
    }
  });

  it('under runInWorktree, works on each session in a git worktree and branch of its own, and removes them once the session is deleted', async () => {
    const model = new ScriptedModel((request) => {
      const last = request.messages[request.messages.length - 1] as Json;
      if (last.role !== 'user') return completion({ content: 'Done.' });
      const text = String(last.content);
      return completion({
        tool_calls: [
          call('c1', 'Create', { file_path: 'note.txt', content: `${text}\n` }),
          ...(text.startsWith('Commit')
            ? [call('c2', 'Execute', { command: 'git add note.txt && git -c user.email=d@example.com -c user.name=D commit -qm note' })]
            : []),
        ],
      });
    });
    const modelUrl = await model.start();
    try {
      const { owner, computerId, workspace, home, output } = await computerWithAgent({
        AGENT_MODEL_BASE_URL: modelUrl,
        AGENT_MODEL: 'scripted-1',
        AGENT_WORKTREE_PRUNE_MS: '1',
      });
      mkdirSync(workspace, { recursive: true });
      const git = (...args: string[]) => execFileSync('git', args, { cwd: workspace, encoding: 'utf8' }).trim();
      git('init', '-q');
      writeFileSync(join(workspace, 'README.md'), '# app\n');
      git('add', '.');
      git('-c', 'user.email=d@example.com', '-c', 'user.name=D', 'commit', '-qm', 'init');
      await setControls({ sessionDefaultSettings: { runInWorktree: true } });
      const worktree = (sessionId: string) => join(home, 'state', 'worktrees', sessionId);
      const branches = () => git('branch', '--format=%(refname:short)').split('\n').sort();

      const committed = await say(computerId, 'Commit the first note');
      await untilIdle(committed, output);
      const scratch = await say(computerId, 'Second note');
      await untilIdle(scratch, output);
      expect(readFileSync(join(worktree(committed), 'note.txt'), 'utf8')).toBe('Commit the first note\n');
      expect(readFileSync(join(worktree(scratch), 'note.txt'), 'utf8')).toBe('Second note\n');
      expect(existsSync(join(workspace, 'note.txt'))).toBe(false);
      expect(branches()).toEqual([`agent-platform/session-${committed}`, `agent-platform/session-${scratch}`, git('branch', '--show-current')].sort());
      expect(git('log', '-1', '--format=%s', `agent-platform/session-${committed}`)).toBe('note');

      // Deleted sessions: their worktrees go at the agent's next look; a branch holding commits found nowhere else stays.
      for (const sessionId of [committed, scratch]) await t.http().delete(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(204);
      await untilIdle(await say(computerId, 'Third note'), output);
      await until(
        () => [existsSync(worktree(committed)), existsSync(worktree(scratch))],
        (gone) => !gone[0] && !gone[1],
        'the worktrees to go',
        20_000,
      );
      expect(branches()).toContain(`agent-platform/session-${committed}`);
      expect(branches()).not.toContain(`agent-platform/session-${scratch}`);
    } finally {
      await model.stop();
    }
  });

  it('takes no new work while the computer-kind controls keep its computer out, waits without exiting, and takes it once let back in', async () => {
    const { owner, computerId, token, child, output } = await computerWithAgent({ AGENT_WORK_DISABLED_RETRY_MS: '200' });
    const claimAs = (auth: Record<string, string>, body: Json = {}) =>
      t
        .http()
        .post('/api/v0/agent/claims')
        .set(auth)
        .send({ waitMs: 0, ...body });
    const agentAuth = { Authorization: `Bearer ${token}` };

    await setControls({ byomComputersEnabled: false });
    const sessionId = await say(computerId, 'Anyone there?');
    await until(output, (text) => text.includes('not taking work'), 'the agent to say it is kept from work', 20_000);
    expect(output()).toContain('BYOM computers are turned off');
    // Neither the computer's own token nor an owner's key naming the computer gets the work.
    for (const auth of [agentAuth, owner.auth]) {
      const refused = await claimAs(auth, auth === owner.auth ? { computerId } : {});
      expect(refused.status).toBe(403);
      expect(refused.body.metadata).toEqual({ code: 'computer_work_disabled', control: 'byomComputersEnabled', computerId });
    }
    await setControls({ byomComputersEnabled: true, byomComputersAllowedEmails: ['someone.else@example.com'] });
    const unlisted = await claimAs(agentAuth);
    expect(unlisted.status).toBe(403);
    expect(unlisted.body.metadata).toMatchObject({ control: 'byomComputersAllowedEmails' });
    expect((await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200)).body.status).toBe('pending');
    expect(child.exitCode).toBeNull();
    expect(output().match(/not taking work/g)).toHaveLength(1);

    // The owner listed (in other case): the waiting agent takes the work without a restart.
    await setControls({ byomComputersAllowedEmails: [owner.email.toUpperCase()] });
    await untilIdle(sessionId, output);
    expect(output()).toContain('taking work again');
    // No model here: the turn it took answers how to configure one.
    expect((await messages(sessionId)).map((m) => m.role)).toEqual(['user', 'system']);
  });

  describe('under the sandbox settings', () => {
    /** A model that runs each of `commands` with Execute, then answers. */
    const executing = (commands: string[]) =>
      new ScriptedModel((request) => {
        const last = request.messages[request.messages.length - 1] as Json;
        if (last.role === 'user') return completion({ tool_calls: commands.map((command, i) => call(`call_${i + 1}`, 'Execute', { command })) });
        return completion({ content: 'Done.' });
      });

    itInSandbox('runs commands in the OS sandbox: they write in the workspace, but not outside it, and cannot read a denied file', async () => {
      const home = mkdtempSync(join(tmpdir(), 'ap-outside-'));
      folders.push(home);
      writeFileSync(join(home, 'secret.txt'), 'the secret\n');
      const model = executing(['echo inside > made.txt && cat made.txt', `echo out > ${home}/escaped.txt`, `cat ${home}/secret.txt`]);
      const modelUrl = await model.start();
      try {
        const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
        await setControls({ sandbox: { enabled: true, filesystem: { denyRead: [join(home, 'secret.txt')] } } });
        const sessionId = await say(computerId, 'Write files and read the secret.');
        await untilIdle(sessionId, output);
        const [inside, outside, secret] = (await messages(sessionId)).find((m) => m.role === 'tool')!.content as Json[];
        expect(inside).toMatchObject({ isError: false, content: 'inside\n[exit code 0]' });
        expect(readFileSync(join(workspace, 'made.txt'), 'utf8')).toBe('inside\n');
        expect(outside).toMatchObject({ isError: true, content: expect.stringMatching(/Read-only file system/) });
        expect(existsSync(join(home, 'escaped.txt'))).toBe(false);
        expect(secret).toMatchObject({ isError: true, content: expect.stringMatching(/Permission denied/) });
        expect(secret.content).not.toContain('the secret');
      } finally {
        await model.stop();
      }
    });

    it('refuses commands, rather than running them unsandboxed, when the sandbox programs are missing', async () => {
      const model = executing(['touch escaped.txt']);
      const modelUrl = await model.start();
      try {
        // A PATH without bubblewrap, socat and ripgrep: the agent itself needs none of them.
        const { computerId, workspace, output } = await computerWithAgent({
          AGENT_MODEL_BASE_URL: modelUrl,
          AGENT_MODEL: 'scripted-1',
          PATH: '/nonexistent',
        });
        await setControls({ sandbox: { enabled: true } });
        const sessionId = await say(computerId, 'Touch a file.');
        await untilIdle(sessionId, output);
        const results = (await messages(sessionId)).find((m) => m.role === 'tool')!;
        expect(results.content[0]).toMatchObject({
          toolUseId: 'call_1',
          isError: true,
          content: expect.stringMatching(/sandbox\.enabled.*bubblewrap, socat, ripgrep are not installed.*Nothing ran/),
        });
        expect(existsSync(join(workspace, 'escaped.txt'))).toBe(false);
      } finally {
        await model.stop();
      }
    });

    itInSandbox('keeps to networkPolicy without the sandbox too: a command that computes an address outside it reaches nothing', async () => {
      let reached = 0;
      const host = createServer((_request, response) => {
        reached++;
        response.end('reached');
      });
      await new Promise<void>((resolve) => host.listen(0, '127.0.0.2', resolve));
      const port = (host.address() as AddressInfo).port;
      // The address is computed, so that no reading of the command can see it: only the confinement can stop it.
      const model = executing([`curl -s -o /dev/null -w '%{http_code}' --noproxy '' --max-time 10 http://$(printf 127.0.0.%s 2):${port}/`]);
      const modelUrl = await model.start();
      try {
        const { computerId, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
        const curlResult = async (allowedIps: string[]) => {
          await setControls({ networkPolicy: { allowedIps } });
          const sessionId = await say(computerId, 'Fetch the page.');
          await untilIdle(sessionId, output);
          return ((await messages(sessionId)).find((m) => m.role === 'tool')!.content[0] as { content: string }).content;
        };
        expect(await curlResult(['127.0.0.1/32'])).toMatch(/^(403|000)\n\[exit code \d+\]$/);
        expect(reached).toBe(0);
        expect(await curlResult(['127.0.0.1/32', '127.0.0.2/32'])).toBe('200\n[exit code 0]');
        expect(reached).toBe(1);
      } finally {
        await model.stop();
        await new Promise((resolve) => host.close(resolve));
      }
    });

    it('keeps to networkPolicy: a command naming an address outside it, and a model endpoint outside it, are refused', async () => {
      const model = executing(['curl -sS http://10.20.30.40/ > fetched.txt']);
      const modelUrl = await model.start();
      try {
        const { computerId, workspace, output } = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
        await setControls({ networkPolicy: { allowedIps: ['127.0.0.0/8', '192.168.0.0/16'] } });
        const sessionId = await say(computerId, 'Fetch a page.');
        await untilIdle(sessionId, output);
        const results = (await messages(sessionId)).find((m) => m.role === 'tool')!;
        expect(results.content[0]).toMatchObject({
          isError: true,
          content: expect.stringMatching(/networkPolicy\.allowedIps: 10\.20\.30\.40 is not among.*nothing ran/),
        });
        expect(existsSync(join(workspace, 'fetched.txt'))).toBe(false);

        // The model itself (on loopback) leaves the allowed addresses: the turn is refused before any request.
        await setControls({ networkPolicy: { allowedIps: ['10.0.0.0/8'] } });
        const asked = model.requests.length;
        const second = await say(computerId, 'Try again.');
        await untilIdle(second, output);
        const [, refusal] = await messages(second);
        expect(refusal).toMatchObject({
          role: 'system',
          content: [{ type: 'text', text: expect.stringMatching(/networkPolicy\.allowedIps: 127\.0\.0\.1 is not among.*cannot reach its model scripted-1/) }],
        });
        expect(model.requests.length).toBe(asked);
      } finally {
        await model.stop();
      }
    });
  });
});
