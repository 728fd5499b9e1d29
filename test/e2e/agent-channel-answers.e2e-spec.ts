import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Ajv from 'ajv';
import { ChannelRefusal, PlatformClient } from '../../src/agent/platform-client';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

interface Answer {
  method: string;
  path: string;
  status: number;
  body: unknown;
}
type Document = { paths: Record<string, Record<string, unknown>> };

/** JSON Pointer's escapes for one segment. */
const segment = (text: string) => text.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The agent's types for the agent channel are generated from the OpenAPI document (src/contract/agent-channel.ts): they
 * are true only if the server answers as its document says. The reference agent's own client takes a turn through
 * every operation it calls, as a computer's agent does, and every answer it got, refusals included, must match the
 * document's schema for that operation and status.
 */
describe('Agent channel answers, against the contract the agent is typed with', () => {
  let t: TestApp;
  let doc: Document;
  const answers: Answer[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.http().get('/docs-json').expect(200)).body as Document;
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await t.close();
  });

  /**
   * The agent channel's operations in the document, but the relays: the model relay (the vendors' shapes, which the
   * contract leaves open) and the MCP relay and launch (the MCP SDK's client speaks them; test/e2e/mcp-relay.e2e-spec.ts).
   */
  const operations = () =>
    Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/api/v0/agent/') && !path.startsWith('/api/v0/agent/models/') && !path.startsWith('/api/v0/agent/mcp/'))
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`))
      .sort();

  it('answers every operation the agent calls as the document says, refusals included', async () => {
    const owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    const computer = (
      await t.http().post('/api/v0/computers').set(owner.auth).send({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' }).expect(201)
    ).body as { id: string; agentToken: string };
    const sessionId = ((await t.http().post('/api/v0/sessions').set(owner.auth).send({}).expect(201)).body as { sessionId: string }).sessionId;
    await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'Fix the build', computerId: computer.id }).expect(200);

    // Every answer the agent's client gets, as it came (the client itself keeps only what it reads).
    const fetch = globalThis.fetch;
    jest.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      const res = await fetch(input, init);
      const text = await res.clone().text();
      answers.push({
        method: (init?.method ?? 'GET').toLowerCase(),
        path: new URL(String(input)).pathname,
        status: res.status,
        body: text ? JSON.parse(text) : undefined,
      });
      return res;
    });
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const client = new PlatformClient({ baseUrl: `http://127.0.0.1:${port}`, token: computer.agentToken, retryWindowMs: 0 });

    // A marketplace of the organization's, for the plugin catalog report.
    await t
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(owner.auth)
      .send({ settings: { extraKnownMarketplaces: { team: { source: 'git', repo: 'https://git.example.com/team/plugins.git' } } } })
      .expect(200);

    await client.connect('laptop.example');
    await client.policy();
    await client.reportPluginCatalog({ marketplace: 'team', outcome: 'failed', error: 'git.example.com could not be reached' });
    const work = (await client.claim(0))!;
    expect(work.sessionId).toBe(sessionId);
    await client.append(sessionId, work.turnId, [
      {
        role: 'assistant',
        modelId: 'model-a',
        content: [
          { type: 'thinking', thinking: 'The build fails at lint.', signature: '', signatureProvider: 'generic-chat-completion-api' },
          { type: 'text', text: 'Running the linter.' },
          { type: 'tool_use', id: 'call-1', name: 'Execute', input: { command: 'npm run lint' } },
        ],
      },
    ]);
    await client.append(sessionId, work.turnId, [{ role: 'tool', content: [{ type: 'tool_result', toolUseId: 'call-1', content: 'ok', isError: false }] }]);
    expect((await client.conversation(sessionId, work.turnId)).messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    await client.usage(sessionId, { turnId: work.turnId, model: 'model-a', inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, thinkingTokens: 2 });
    await client.heartbeat(sessionId, work.turnId);
    await client.delta(sessionId, { turnId: work.turnId, step: 0, text: 'Running the' });
    const asked = await client.requestApproval(sessionId, {
      turnId: work.turnId,
      toolName: 'Execute',
      toolCallId: 'call-2',
      summary: 'git push',
      input: { command: 'git push' },
    });
    await t.http().post(`/api/v0/sessions/${sessionId}/tool-approvals/${asked.approvalId}`).set(owner.auth).send({ decision: 'allow' }).expect(200);
    expect((await client.awaitApproval(sessionId, asked.approvalId, work.turnId, 0)).status).toBe('allowed');
    await client.endTurn(sessionId, work.turnId, 1234);
    expect(await client.existingSessions([sessionId, randomUUID()])).toEqual([sessionId]);
    // A run the agent starts itself (exec): its session, with its turn already the agent's.
    const run = await client.startSession({ text: 'Run the tests', sessionSettings: { autonomyMode: 'unattended' } });
    expect(run.work.sessionId).toBe(run.session.sessionId);
    await client.endTurn(run.session.sessionId, run.work.turnId, 10);
    expect(await client.claim(0)).toBeNull();
    // A computer's agent no longer sees a session whose turn it ended.
    const refused = await client.heartbeat(sessionId, work.turnId).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ChannelRefusal);
    expect({ status: (refused as ChannelRefusal).status, code: (refused as ChannelRefusal).code }).toEqual({ status: 404, code: 'session_not_found' });

    const ajv = new Ajv({ strict: false, validateFormats: false });
    ajv.addSchema({ ...doc, $id: 'openapi' });
    const templates = Object.keys(doc.paths).map((path) => ({ path, pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
    const problems = answers.flatMap(({ method, path, status, body }): Array<{ operation: string; status: number; errors: unknown }> => {
      const template = templates.find(({ pattern }) => pattern.test(path))!.path;
      // An answer without a body (202): the document declares the status, without content.
      if (body === undefined) {
        const declared = (doc.paths[template] as Record<string, { responses: Record<string, { content?: unknown }> }>)[method].responses[status];
        return declared && !declared.content ? [] : [{ operation: `${method} ${template}`, status, errors: 'an empty answer the document does not declare' }];
      }
      const validate = ajv.compile({ $ref: `openapi#/paths/${segment(template)}/${method}/responses/${status}/content/application~1json/schema` });
      return validate(body) ? [] : [{ operation: `${method} ${template}`, status, errors: validate.errors }];
    });
    expect(problems).toEqual([]);
    // The tour reached every operation of the channel, and a refusal.
    expect([...new Set(answers.map(({ method, path }) => `${method} ${templates.find(({ pattern }) => pattern.test(path))!.path}`))].sort()).toEqual(
      operations(),
    );
    expect(answers.some(({ status }) => status === 404)).toBe(true);
  });
});
