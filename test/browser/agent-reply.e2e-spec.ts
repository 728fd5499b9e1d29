/// <reference lib="dom" />
// Code passed to page.evaluate() runs in the browser.
import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, signedInTab } from './browser';

const AGENT_MAIN = join(__dirname, '..', '..', 'dist', 'agent', 'main.js');

/**
 * The console's main flow end to end: a person types a message in the browser and sees the reply of a real agent
 * being written, then stored, without reloading. The reference agent runs as its own process for a BYOM computer,
 * against the real server and a scripted OpenAI-compatible model on loopback that streams back the words it was sent.
 */
(browserAvailable() ? describe : describe.skip)('A message sent in the console, answered live by the reference agent', () => {
  let t: TestApp;
  let browser: Browser;
  let owner: TestUser;
  let model: Server;
  let agent: ChildProcess | undefined;
  let agentOutput = '';
  let home: string;
  const csp: string[] = [];

  beforeAll(async () => {
    model = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const { messages } = JSON.parse(body) as { messages: Array<{ role: string; content: unknown }> };
        const asked =
          messages
            .filter((m) => m.role === 'user')
            .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
            .pop() ?? '';
        const reply = `Scripted reply to: ${asked.includes('count the files') ? 'count the files' : asked}`;
        // Streamed as the agent asks, a word at a time with pauses longer than its 100 ms coalescing: the page sees the
        // answer being written before it is stored.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const write = (event: object | string) => res.write(`data: ${typeof event === 'string' ? event : JSON.stringify(event)}\n\n`);
        void (async () => {
          for (const piece of reply.split(/(?<= )/)) {
            write({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: piece } }] });
            await new Promise((resolve) => setTimeout(resolve, 300));
          }
          write({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
          write({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 50, completion_tokens: 8 } });
          write('[DONE]');
          res.end();
        })();
      });
    });
    model.listen(0, '127.0.0.1');
    await once(model, 'listening');
    [t, browser] = await Promise.all([startTestApp({}), launchChromium()]);
    owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    home = mkdtempSync(join(tmpdir(), 'ap-console-agent-'));
  });

  afterAll(async () => {
    agent?.kill('SIGTERM');
    if (agent && agent.exitCode === null) await once(agent, 'exit');
    await browser?.close();
    await t?.close();
    await new Promise<void>((resolve) => model.close(() => resolve()));
    rmSync(home, { recursive: true, force: true });
    expect(csp).toEqual([]);
  });

  it("shows the agent's reply to a message typed in the browser, without a reload", async () => {
    const computer = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' })
      .expect(201);
    const modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
    agent = spawn(process.execPath, [AGENT_MAIN, '--url', baseUrlOf(t), '--workspace', join(home, 'workspace')], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: home,
        AGENT_TOKEN: computer.body.agentToken as string,
        AGENT_STATE_DIR: join(home, 'state'),
        AGENT_HOOKS_FILE: join(home, 'hooks.json'),
        AGENT_MODEL_BASE_URL: modelUrl,
        AGENT_MODEL: 'scripted-1',
      },
    });
    agent.stdout?.on('data', (chunk: Buffer) => (agentOutput += chunk.toString()));
    agent.stderr?.on('data', (chunk: Buffer) => (agentOutput += chunk.toString()));
    const session = await t.http().post('/api/v0/sessions').set(owner.auth).send({ title: 'Ask the agent', computerId: computer.body.id }).expect(201);

    const page = await signedInTab(browser, baseUrlOf(t), owner.key, csp);
    await page.goto(`/sessions/${session.body.sessionId as string}`);
    await page.getByRole('heading', { name: 'Ask the agent' }).waitFor();
    // A mark that a reload would wipe.
    await page.evaluate(() => ((window as unknown as { stayed: boolean }).stayed = true));
    await page.getByLabel('Message', { exact: true }).fill('Please count the files');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Please count the files').waitFor();
    const sessionMessages = async () =>
      (
        await t
          .http()
          .get(`/api/v0/sessions/${session.body.sessionId as string}/messages`)
          .set(owner.auth)
          .expect(200)
      ).body.messages as { role: string }[];
    try {
      // The answer as the model writes it, before it is stored; then the stored one in its place.
      await page.getByTestId('writing').filter({ hasText: 'Scripted reply' }).waitFor({ timeout: 20_000 });
      expect((await sessionMessages()).map((m) => m.role)).toEqual(['user']);
      await page.locator('.message-assistant:not(.message-writing)').filter({ hasText: 'Scripted reply to: count the files' }).waitFor();
    } catch (error) {
      throw new Error(`${(error as Error).message}\nagent output:\n${agentOutput}`);
    }
    await page.getByTestId('writing').waitFor({ state: 'detached' });
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
    expect((await sessionMessages()).map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(await checkPage(page, 'session-agent-reply')).toEqual([]);
    await page.close();
  });
});
