/// <reference lib="dom" />
// Code passed to page.evaluate() runs in the browser.
import type { Socket } from 'node:net';
import type { IncomingMessage, Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { EventLog } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { sleep, until } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, openConsole } from './browser';

/** A 1x1 PNG. */
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
/** The add-message routes' body limit in this suite: far below the 32 MiB the console assumes, as an operator may set it. */
const MESSAGE_LIMIT = 64 * 1024;
const DAY = 86_400_000;

/**
 * The Sessions pages' harder paths in a real Chromium against the real server on PGlite: files dropped on the
 * composer, the server's 413 and 415 in its own words, the live stream dropped and resumed (and a resume point the
 * server forgot), a member on another member's session, and the theme toggle over the system's scheme.
 */
(browserAvailable() ? describe : describe.skip)('Sessions pages: drops, refusals, resumes, ownership, in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let owner: TestUser;
  const accessibility: string[] = [];
  const csp: string[] = [];

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestApp({ CONTROLS_CACHE_MS: '0', MESSAGE_BODY_LIMIT_BYTES: String(MESSAGE_LIMIT) }), launchChromium()]);
    base = baseUrlOf(t);
    owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    expect(accessibility).toEqual([]);
    expect(csp).toEqual([]);
  });

  const post = (user: TestUser, path: string, body: object = {}) => t.http().post(path).set(user.auth).send(body);
  const messagesOf = async (user: TestUser, sessionId: string) =>
    (await t.http().get(`/api/v0/sessions/${sessionId}/messages`).set(user.auth).expect(200)).body.messages as { content: unknown[] }[];
  /** What retention does after EVENT_RETENTION_DAYS, now: the log forgets every event written so far. */
  const forgetTheLog = () => t.app.get(EventLog).forgetExpired(new Date(Date.now() + 31 * DAY));

  async function signedIn(user: TestUser, path: string, before?: (page: Page) => void): Promise<Page> {
    const opened = await openConsole(browser, base);
    const page = opened.page;
    page.on('close', () => csp.push(...opened.cspViolations));
    await page.goto('/sign-in');
    await page.getByLabel('API key').fill(user.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    before?.(page);
    await page.goto(path);
    return page;
  }

  async function newSession(user: TestUser, body: object = {}): Promise<string> {
    return (await post(user, '/api/v0/sessions', body).expect(201)).body.sessionId as string;
  }

  /** Files dropped on the composer as a person drags them from their desktop: a DataTransfer made in the page. */
  async function drop(page: Page, files: { name: string; type: string; base64?: string; text?: string; size?: number }[]) {
    const transfer = await page.evaluateHandle((list) => {
      const data = new DataTransfer();
      for (const file of list) {
        const bytes =
          file.base64 !== undefined
            ? Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0))
            : file.size !== undefined
              ? new Uint8Array(file.size)
              : file.text;
        data.items.add(new File([bytes as BlobPart], file.name, { type: file.type }));
      }
      return data;
    }, files);
    const composer = page.getByTestId('composer');
    await composer.dispatchEvent('dragenter', { dataTransfer: transfer });
    await composer.dispatchEvent('dragover', { dataTransfer: transfer });
    await page.locator('.composer.dragging').waitFor();
    await composer.dispatchEvent('drop', { dataTransfer: transfer });
    await transfer.dispose();
  }

  it('files dropped on the composer are attached, sent, and stored with the message', async () => {
    const sessionId = await newSession(owner, { title: 'Dropped files' });
    const page = await signedIn(owner, `/sessions/${sessionId}`);
    await page.getByText('Live: new messages').waitFor();
    await drop(page, [
      { name: 'pixel.png', type: 'image/png', base64: PIXEL },
      { name: 'plan.md', type: 'text/markdown', text: '# Plan\nship it' },
    ]);
    const attachments = page.getByRole('list', { name: 'Attachments' });
    await attachments.getByText('pixel.png').waitFor();
    await attachments.getByText('plan.md').waitFor();
    expect(await page.locator('.composer.dragging').count()).toBe(0);
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('What do these say?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.message-user').filter({ hasText: 'What do these say?' }).waitFor();
    await page.locator('.message-user img.image').waitFor();
    expect(await attachments.count()).toBe(0);

    const [message] = await messagesOf(owner, sessionId);
    expect(message.content).toEqual([
      { type: 'text', text: 'What do these say?' },
      { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PIXEL } },
      { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: '# Plan\nship it', name: 'plan.md', mime: 'text/markdown' } },
    ]);
    await page.close();
  });

  it("the client names its limits before upload; the server's 413 and 415 are shown in its words with the request id", async () => {
    const sessionId = await newSession(owner, { title: 'Refusals' });
    const page = await signedIn(owner, `/sessions/${sessionId}`);
    await page.getByText('Live: new messages').waitFor();

    // The console's own check, before any upload: the file is named with the limit it breaks.
    await drop(page, [{ name: 'huge.png', type: 'image/png', size: 6 * 1024 * 1024 }]);
    await page.getByText('huge.png is 6.0 MiB: images may be up to 5 MiB.').waitFor();
    expect(await page.getByRole('list', { name: 'Attachments' }).count()).toBe(0);

    // 100,000 characters pass the console's check (2,000,000) but not this server's 64 KiB: its 413, as it words it.
    await drop(page, [{ name: 'big.log', type: 'text/plain', text: 'x'.repeat(100_000) }]);
    await page.getByRole('list', { name: 'Attachments' }).getByText('big.log').waitFor();
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('Read the log');
    const sent = (page: Page) =>
      page.waitForResponse((response) => response.url().endsWith(`/sessions/${sessionId}/messages`) && response.request().method() === 'POST');
    let answer = sent(page);
    await page.getByRole('button', { name: 'Send' }).click();
    const tooLarge = await answer;
    expect(tooLarge.status()).toBe(413);
    const tooLargeBody = (await tooLarge.json()) as { title: string; detail: string };
    expect(tooLargeBody.detail).toBe(`The request body is larger than this operation's limit of ${MESSAGE_LIMIT} bytes.`);
    let alert = page.getByRole('alert').filter({ hasText: 'Sending the message' });
    await alert.getByText(`Sending the message: ${tooLargeBody.title} (413)`).waitFor();
    await alert.getByText(tooLargeBody.detail).waitFor();
    await alert.getByText(tooLarge.headers()['x-request-id']).waitFor();
    accessibility.push(...(await checkPage(page, 'session-413')));
    expect(await messagesOf(owner, sessionId)).toEqual([]);

    // The console always sends JSON; something between it and the server that changes the type (the client's check
    // bypassed) gets the server's 415, shown as it is worded.
    await page.getByRole('button', { name: 'Remove big.log' }).click();
    await page.route(`**/api/v0/sessions/${sessionId}/messages`, (route) =>
      route.request().method() === 'POST' ? route.continue({ headers: { ...route.request().headers(), 'content-type': 'text/plain' } }) : route.continue(),
    );
    answer = sent(page);
    await page.getByRole('button', { name: 'Send' }).click();
    const unsupported = await answer;
    expect(unsupported.status()).toBe(415);
    const unsupportedBody = (await unsupported.json()) as { title: string; detail: string };
    alert = page.getByRole('alert').filter({ hasText: 'Sending the message' });
    await alert.getByText(`Sending the message: ${unsupportedBody.title} (415)`).waitFor();
    await alert.getByText('Request bodies must be JSON: send Content-Type: application/json.').waitFor();
    await alert.getByText(unsupported.headers()['x-request-id']).waitFor();
    expect(await messagesOf(owner, sessionId)).toEqual([]);

    // Unchanged again, the same message goes through once; the refusal is gone.
    await page.unroute(`**/api/v0/sessions/${sessionId}/messages`);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.message-user').filter({ hasText: 'Read the log' }).waitFor();
    expect(await alert.count()).toBe(0);
    expect(await messagesOf(owner, sessionId)).toHaveLength(1);
    await page.close();
  });

  it('live: a dropped stream resumes with Last-Event-ID, nothing missed or doubled; a forgotten resume point (410) reloads', async () => {
    const sessionId = await newSession(owner, { title: 'Resumes' });
    const streams: { lastEventId: string | undefined }[] = [];
    let messageLoads = 0;
    const gone: number[] = [];
    const page = await signedIn(owner, `/sessions/${sessionId}`, (page) => {
      page.on('request', (request) => {
        const path = new URL(request.url()).pathname;
        if (path === `/api/v0/sessions/${sessionId}/events` && request.headers()['accept'] === 'text/event-stream')
          streams.push({ lastEventId: request.headers()['last-event-id'] });
        if (path === `/api/v0/sessions/${sessionId}/messages` && request.method() === 'GET') messageLoads++;
      });
      page.on('response', (response) => {
        if (new URL(response.url()).pathname === `/api/v0/sessions/${sessionId}/events` && response.status() === 410) gone.push(response.status());
      });
    });
    // The server's side of the stream, to drop it as a proxy or a network would.
    const server = t.app.getHttpServer() as Server;
    const sockets = new Set<Socket>();
    const onRequest = (request: IncomingMessage) => {
      if (request.url?.startsWith(`/api/v0/sessions/${sessionId}/events`)) sockets.add(request.socket);
    };
    server.on('request', onRequest);
    const dropTheStream = () => {
      expect(sockets.size).toBeGreaterThan(0);
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    };
    const userMessages = () => page.locator('.message-user .markdown').allInnerTexts();
    try {
      await page.getByText('Live: new messages').waitFor();
      await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'First' }).expect(200);
      await page.locator('.message-user').filter({ hasText: 'First' }).waitFor();
      await page.getByTestId('session-status').filter({ hasText: 'Waiting for an agent' }).waitFor();
      const seen = (await t.http().get(`/api/v0/sessions/${sessionId}/events`).set(owner.auth).expect(200)).body.events as { seq: number }[];
      const loadsBefore = messageLoads;
      const streamsBefore = streams.length;

      // Dropped: two messages arrive while the page is away; it comes back from where it was.
      dropTheStream();
      await page.getByText('Live updates interrupted: reconnecting…').waitFor();
      await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'Second' }).expect(200);
      await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'Third' }).expect(200);
      await page.locator('.message-user').filter({ hasText: 'Third' }).waitFor();
      await page.getByText('Live: new messages').waitFor();
      expect(streams.slice(streamsBefore)).toEqual([{ lastEventId: String(seen.at(-1)!.seq) }]);
      expect(messageLoads).toBe(loadsBefore); // replayed from the stream, not reloaded
      expect(await userMessages()).toEqual(['First', 'Second', 'Third']);

      // Dropped again, and meanwhile the log forgets past the page's resume point: 410, a fresh stream and a reload.
      // The reconnection is held until the log has forgotten, however slow the machine.
      let release = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      await page.route(`**/api/v0/sessions/${sessionId}/events`, async (route) => {
        await held;
        await route.continue();
      });
      dropTheStream();
      await page.getByText('Live updates interrupted: reconnecting…').waitFor();
      await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'Fourth' }).expect(200);
      expect(await forgetTheLog()).toBeGreaterThan(0);
      release();
      await page.locator('.message-user').filter({ hasText: 'Fourth' }).waitFor();
      await page.getByText('Live: new messages').waitFor();
      expect(gone).toEqual([410]);
      const resumed = streams.slice(streamsBefore + 1);
      expect(resumed).toHaveLength(2);
      expect(resumed[0].lastEventId).toEqual(expect.stringMatching(/^\d+$/));
      expect(resumed[1].lastEventId).toBeUndefined();
      await until(
        async () => messageLoads,
        (loads) => loads > loadsBefore,
        'the messages reloaded after the 410',
      );
      await page.unroute(`**/api/v0/sessions/${sessionId}/events`);
      expect(await userMessages()).toEqual(['First', 'Second', 'Third', 'Fourth']);

      // Live again on the fresh stream.
      await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: 'Fifth' }).expect(200);
      await page.locator('.message-user').filter({ hasText: 'Fifth' }).waitFor();
      expect(await userMessages()).toEqual(['First', 'Second', 'Third', 'Fourth', 'Fifth']);
    } finally {
      server.off('request', onRequest);
      await page.close();
    }
  });

  it('live text: the answer shows as the agent writes it, without reading the session again, and gives way to the stored message', async () => {
    // An organization of its own: the claim takes this session's turn, not another test's waiting one.
    const writer = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    const sessionId = await newSession(writer, { title: 'Streamed answer' });
    let sessionReads = 0;
    const resumedFrom: (string | undefined)[] = [];
    const page = await signedIn(writer, `/sessions/${sessionId}`, (page) =>
      page.on('request', (request) => {
        const path = new URL(request.url()).pathname;
        if (request.method() === 'GET' && path === `/api/v0/sessions/${sessionId}`) sessionReads++;
        if (path === `/api/v0/sessions/${sessionId}/events` && request.headers()['accept'] === 'text/event-stream')
          resumedFrom.push(request.headers()['last-event-id']);
      }),
    );
    await page.getByText('Live: new messages').waitFor();
    await post(writer, `/api/v0/sessions/${sessionId}/messages`, { text: 'Write a poem.' }).expect(200);
    // The writer's key takes the turn as an agent would.
    const claim = await post(writer, '/api/v0/agent/claims', {}).expect(200);
    expect(claim.body.work).toMatchObject({ sessionId });
    const turnId = claim.body.work.turnId as string;
    await page.getByTestId('session-status').filter({ hasText: 'Running' }).waitFor();
    const delta = (step: number, text: string) => post(writer, `/api/v0/agent/sessions/${sessionId}/deltas`, { turnId, step, text }).expect(202);
    const writing = page.getByTestId('writing');
    const status = page.getByRole('status').filter({ hasText: 'The agent is writing an answer.' });
    expect(await writing.count()).toBe(0);

    // 30 pieces, about 10 a second as the reference agent sends them: the text grows, and the session is not read again.
    await sleep(300);
    const readsBefore = sessionReads;
    let text = '';
    for (let i = 0; i < 30; i++) {
      const piece = `line ${i}, `;
      await delta(0, piece);
      text += piece;
      if (i === 0 || i === 14) {
        await writing.filter({ hasText: text.trim() }).waitFor();
        expect(await writing.locator('.badge').textContent()).toBe('writing…');
        await status.waitFor({ state: 'attached' });
      }
      await sleep(70);
    }
    await writing.filter({ hasText: text.trim() }).waitFor();
    // Shown before anything is stored: the only message is the user's.
    expect((await messagesOf(writer, sessionId)).length).toBe(1);
    expect(await page.locator('.message').count()).toBe(2);
    expect(sessionReads - readsBefore).toBeLessThanOrEqual(2);
    accessibility.push(...(await checkPage(page, 'session-writing')));

    // The agent stores the message: it takes the provisional text's place; a late piece of that step is dropped.
    const answer = text.trim();
    await post(writer, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId,
      messages: [{ role: 'assistant', content: [{ type: 'text', text: answer }] }],
    }).expect(200);
    await page.locator('.message-assistant:not(.message-writing)').filter({ hasText: answer }).waitFor();
    await writing.waitFor({ state: 'detached' });
    expect(await status.count()).toBe(0);
    await delta(0, 'late piece');
    await sleep(300);
    expect(await writing.count()).toBe(0);

    // The next model call writes anew; a later one replaces it.
    await delta(1, 'Thinking it over');
    await writing.filter({ hasText: 'Thinking it over' }).waitFor();
    await delta(2, 'Final words');
    await writing.filter({ hasText: 'Final words' }).waitFor();
    expect(await writing.textContent()).not.toContain('Thinking it over');
    expect(await page.locator('.message-writing').count()).toBe(1);

    // The stream drops (pieces sent meanwhile are lost): rather than text with a hole, that step waits for its message;
    // the next step shows again.
    const server = t.app.getHttpServer() as Server;
    const sockets = new Set<Socket>();
    const onRequest = (request: IncomingMessage) => {
      if (request.url?.startsWith(`/api/v0/sessions/${sessionId}/events`)) sockets.add(request.socket);
    };
    server.on('request', onRequest);
    try {
      await page.reload();
      await page.getByText('Live: new messages').waitFor();
      await delta(2, 'Final words again');
      await writing.filter({ hasText: 'Final words again' }).waitFor();
      // A numbered event (the turn's usage) after the deltas: the resume point.
      await post(writer, `/api/v0/agent/sessions/${sessionId}/usage`, { turnId, model: 'model-a', inputTokens: 100, outputTokens: 10 }).expect(200);
      await page.getByTestId('session-tokens').waitFor();
      await delta(2, ', still writing');
      await writing.filter({ hasText: 'still writing' }).waitFor();
      for (const socket of sockets) socket.destroy();
      await page.getByText('Live updates interrupted: reconnecting…').waitFor();
      await writing.waitFor({ state: 'detached' });
      await page.getByText('Live: new messages').waitFor();
      // Resumed from the last numbered event: the deltas, without ids, moved nothing.
      const numbered = (await t.http().get(`/api/v0/sessions/${sessionId}/events`).set(writer.auth).expect(200)).body.events as { seq: number }[];
      expect(resumedFrom.at(-1)).toBe(String(numbered.at(-1)!.seq));
      await delta(2, ', and more');
      await delta(3, 'Step three');
      await writing.filter({ hasText: 'Step three' }).waitFor();
      expect(await writing.textContent()).not.toContain('and more');
    } finally {
      server.off('request', onRequest);
    }

    // The turn ends without storing it: the session leaves running, and the provisional text goes.
    await post(writer, `/api/v0/agent/sessions/${sessionId}/end-turn`, { turnId }).expect(200);
    await page.getByTestId('session-status').filter({ hasText: 'Idle' }).waitFor();
    await writing.waitFor({ state: 'detached' });
    expect(await page.locator('.message').count()).toBe(2);
    await page.close();
  });

  it("live thinking shows dimmed and foldable, a running tool's output under its name, and both give way to the stored messages", async () => {
    const writer = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    const sessionId = await newSession(writer, { title: 'Streamed work' });
    const page = await signedIn(writer, `/sessions/${sessionId}`);
    await page.getByText('Live: new messages').waitFor();
    await post(writer, `/api/v0/sessions/${sessionId}/messages`, { text: 'List the files.' }).expect(200);
    const claim = await post(writer, '/api/v0/agent/claims', {}).expect(200);
    expect(claim.body.work).toMatchObject({ sessionId });
    const turnId = claim.body.work.turnId as string;
    await page.getByTestId('session-status').filter({ hasText: 'Running' }).waitFor();
    const delta = (body: object) => post(writer, `/api/v0/agent/sessions/${sessionId}/deltas`, { turnId, step: 0, ...body }).expect(202);
    const call = { toolUseId: 'toolu_1', toolName: 'Execute' };
    const writing = page.getByTestId('writing');
    const thinking = writing.locator('details.live-thinking');
    const running = page.getByTestId('running-tool');
    const status = (text: string) => page.getByRole('status').filter({ hasText: text });

    // Thinking first: dimmed, open while it comes, under "Thinking…"; the answer's text then joins it.
    await delta({ kind: 'thinking', text: 'The user wants a listing; ' });
    await thinking.filter({ hasText: 'The user wants a listing;' }).waitFor();
    expect([await thinking.locator('summary').textContent(), await writing.locator('.badge').textContent()]).toEqual(['Thinking…', 'thinking…']);
    expect(await thinking.evaluate((details) => (details as HTMLDetailsElement).open)).toBe(true);
    expect(await thinking.evaluate((details) => getComputedStyle(details).color)).not.toBe(
      await page
        .locator('.message-role')
        .first()
        .evaluate((el) => getComputedStyle(el).color),
    );
    await status('The agent is thinking.').waitFor({ state: 'attached' });
    await delta({ text: 'I will run ls.' });
    await writing.filter({ hasText: 'I will run ls.' }).waitFor();
    expect(await writing.locator('.badge').textContent()).toBe('writing…');
    accessibility.push(...(await checkPage(page, 'session-thinking')));
    // A reader folds it away, and it stays folded as more comes.
    await thinking.locator('summary').click();
    await delta({ kind: 'thinking', text: 'Execute will do.' });
    await thinking.filter({ hasText: 'Execute will do.' }).waitFor({ state: 'attached' });
    expect(await thinking.evaluate((details) => (details as HTMLDetailsElement).open)).toBe(false);
    // A call's arguments show with the stored call, not live.
    await delta({ kind: 'tool_input', ...call, text: '{"command":"ls"}' });

    // The answer is stored: its live text and thinking go. The tool runs: its output grows under its name.
    await post(writer, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId,
      messages: [
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'The user wants a listing; Execute will do.', signature: 'sig' },
            { type: 'text', text: 'I will run ls.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Execute', input: { command: 'ls' } },
          ],
        },
      ],
    }).expect(200);
    await page.locator('.message-assistant:not(.message-writing)').filter({ hasText: 'I will run ls.' }).waitFor();
    await writing.waitFor({ state: 'detached' });
    await delta({ kind: 'tool_output', ...call, text: 'a.txt\n' });
    await running.filter({ hasText: 'Running Execute' }).filter({ hasText: 'a.txt' }).waitFor();
    await status('The agent is running Execute.').waitFor({ state: 'attached' });
    await delta({ kind: 'tool_output', ...call, text: 'b.txt\n' });
    await running
      .locator('pre')
      .filter({ hasText: /^a\.txt\nb\.txt\n$/ })
      .waitFor();
    expect(await running.count()).toBe(1);
    accessibility.push(...(await checkPage(page, 'session-running-tool')));

    // Its result is stored: the live output goes; a late piece of it is dropped (the next step's text, sent after it, shows it was read).
    await post(writer, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId,
      messages: [{ role: 'tool', content: [{ type: 'tool_result', toolUseId: 'toolu_1', content: 'a.txt\nb.txt\n[exit code 0]', isError: false }] }],
    }).expect(200);
    await page.locator('.tool-result').filter({ hasText: 'Result of Execute' }).waitFor();
    await running.waitFor({ state: 'detached' });
    await delta({ kind: 'tool_output', ...call, text: 'late.txt\n' });
    await post(writer, `/api/v0/agent/sessions/${sessionId}/deltas`, { turnId, step: 1, text: 'Two files.' }).expect(202);
    await writing.filter({ hasText: 'Two files.' }).waitFor();
    expect(await running.count()).toBe(0);
    expect(await page.getByText('late.txt').count()).toBe(0);

    // The turn ends while a tool runs: what is live goes.
    await post(writer, `/api/v0/agent/sessions/${sessionId}/deltas`, {
      turnId,
      step: 1,
      kind: 'tool_output',
      toolUseId: 'toolu_2',
      toolName: 'Execute',
      text: 'more\n',
    }).expect(202);
    await running.filter({ hasText: 'more' }).waitFor();
    await post(writer, `/api/v0/agent/sessions/${sessionId}/end-turn`, { turnId }).expect(200);
    await page.getByTestId('session-status').filter({ hasText: 'Idle' }).waitFor();
    await running.waitFor({ state: 'detached' });
    await writing.waitFor({ state: 'detached' });
    await page.close();
  });

  it("a member reads another member's session without write controls; where the owner is unknown, the API's 403 is shown as worded", async () => {
    const organization = await createOrganization(t, { messageHistory: true });
    const alice = await createUser(t, Role.Member, organization);
    const bob = await createUser(t, Role.Member, organization);
    const sessionId = await newSession(alice, { title: 'Alice’s work' });
    await post(alice, `/api/v0/sessions/${sessionId}/messages`, { text: 'Alice asks' }).expect(200);

    // Alice, a member, writes to her own session.
    const mine = await signedIn(alice, `/sessions/${sessionId}`);
    await mine.getByRole('heading', { name: 'Add a message' }).waitFor();
    await mine.close();

    // Bob, a member too, reads it (the API lets him) and is offered nothing the API would refuse him.
    const page = await signedIn(bob, `/sessions/${sessionId}`);
    await page.getByRole('heading', { name: 'Alice’s work' }).waitFor();
    await page.locator('.message-user').filter({ hasText: 'Alice asks' }).waitFor();
    await page.getByTestId('read-only').filter({ hasText: 'belongs to another member' }).waitFor();
    expect(await page.getByTestId('composer').count()).toBe(0);
    accessibility.push(...(await checkPage(page, 'session-read-only')));

    // Past the log's retention the owner is unknown: the controls show, and the server's refusal is shown as worded.
    await forgetTheLog();
    await page.reload();
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('Bob tries');
    const answer = page.waitForResponse((response) => response.url().endsWith(`/sessions/${sessionId}/messages`) && response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Send' }).click();
    const refused = await answer;
    expect(refused.status()).toBe(403);
    const alert = page.getByRole('alert').filter({ hasText: 'Sending the message' });
    await alert.getByText('Members can change only their own sessions; this one belongs to someone else.').waitFor();
    await alert.getByText('(403)').waitFor();
    await alert.getByText(refused.headers()['x-request-id']).waitFor();
    expect((await messagesOf(alice, sessionId)).length).toBe(1);
    await page.close();
  });

  it("the theme toggle overrides the system's scheme both ways (one palette, light-dark())", async () => {
    const page = await signedIn(owner, '/sessions');
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    const colours = () =>
      page.evaluate(() => ({
        background: getComputedStyle(document.body).backgroundColor,
        text: getComputedStyle(document.body).color,
        scheme: getComputedStyle(document.documentElement).colorScheme,
      }));
    const LIGHT = { background: 'rgb(247, 248, 250)', text: 'rgb(27, 31, 36)' };
    const DARK = { background: 'rgb(17, 20, 24)', text: 'rgb(232, 234, 237)' };

    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await colours()).toMatchObject({ ...DARK, scheme: 'light dark' });
    await page.getByRole('button', { name: 'Light theme' }).click();
    expect(await colours()).toMatchObject({ ...LIGHT, scheme: 'light' });

    await page.emulateMedia({ colorScheme: 'light' });
    expect(await colours()).toMatchObject(LIGHT);
    await page.getByRole('button', { name: 'Dark theme' }).click();
    expect(await colours()).toMatchObject({ ...DARK, scheme: 'dark' });
    await page.reload();
    await page.getByRole('button', { name: 'Light theme' }).waitFor();
    expect(await colours()).toMatchObject(DARK);
    await page.close();
  });
});
