/// <reference lib="dom" />
// Code passed to page.evaluate() runs in the browser.
import type { Browser, Page } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { until } from '../utils/polling';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, openConsole } from './browser';

/** A 1x1 PNG. */
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/**
 * The Sessions pages in a real Chromium against the real server on PGlite: the list, a session with every content
 * block, live updates from the event stream, adding a message, interrupt and tool approvals, and what a guest sees.
 */
(browserAvailable() ? describe : describe.skip)('Sessions pages in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let owner: TestUser;
  const accessibility: string[] = [];
  const csp: string[] = [];

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestApp({ CONTROLS_CACHE_MS: '0' }), launchChromium()]);
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

  async function signedIn(user: TestUser, path: string): Promise<Page> {
    const opened = await openConsole(browser, base);
    const page = opened.page;
    page.on('close', () => csp.push(...opened.cspViolations));
    page.on('dialog', (dialog) => {
      csp.push(`a dialog opened: ${dialog.message()}`);
      void dialog.dismiss();
    });
    await page.goto('/sign-in');
    await page.getByLabel('API key').fill(user.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(path);
    return page;
  }

  async function newSession(user: TestUser, body: object = {}): Promise<string> {
    return (await post(user, '/api/v0/sessions', body).expect(201)).body.sessionId as string;
  }

  /** The user's message, then the owner's key claims the work as an agent would: a running turn. */
  async function runningTurn(sessionId: string, text = 'deploy it') {
    await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text }).expect(200);
    const claim = await post(owner, '/api/v0/agent/claims', {}).expect(200);
    expect(claim.body.work.sessionId).toBe(sessionId);
    return claim.body.work.turnId as string;
  }

  it('the list: empty state, then sessions with status and last activity, "Show more", and the computer filter', async () => {
    const emptyOrg = await createUser(t, Role.Member, await createOrganization(t));
    const empty = await signedIn(emptyOrg, '/sessions');
    await empty.getByText('No sessions yet.').waitFor();
    await empty.getByText('curl -X POST').first().waitFor();
    accessibility.push(...(await checkPage(empty, 'sessions-empty')));
    await empty.close();

    const lister = await createUser(t, Role.Owner, await createOrganization(t));
    const computer = await post(lister, '/api/v0/computers', {
      name: 'build-box',
      provider: 'byom',
      hostId: '6f9d3c1e-6a53-4cc2-9d3e-1c8e4c1f0a11',
      remoteUser: 'dev',
    }).expect(201);
    for (let i = 1; i <= 21; i++) await newSession(lister, { title: `Task ${i}` });
    await newSession(lister, { title: 'On the build box', computerId: computer.body.id });

    const page = await signedIn(lister, '/sessions');
    await page.getByRole('link', { name: 'Sessions', exact: true }).waitFor();
    await page.getByRole('link', { name: 'On the build box' }).waitFor();
    expect(await page.getByRole('row').count()).toBe(21); // a header and 20 sessions
    accessibility.push(...(await checkPage(page, 'sessions')));
    await page.getByRole('button', { name: 'Show more' }).click();
    await page.getByRole('link', { name: 'Task 1', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Show more' }).count()).toBe(0);

    await page.getByLabel('Computer').selectOption({ label: 'build-box' });
    await until(
      () => page.getByRole('row').count(),
      (rows) => rows === 2,
      'the filtered list',
    );
    expect(new URL(page.url()).searchParams.get('computerId')).toBe(computer.body.id);
    await page.getByRole('cell', { name: 'build-box' }).waitFor();
    await page.getByRole('link', { name: 'On the build box' }).waitFor();
    await page.close();
  });

  it('a session with every content block; Markdown rendered inert; earlier messages paged back; checked for accessibility', async () => {
    const sessionId = await newSession(owner, { title: 'Every block', sessionSettings: { model: 'test-model-1' } });
    for (let i = 1; i <= 31; i++) await post(owner, `/api/v0/sessions/${sessionId}/messages`, { text: `Old message ${i}` }).expect(200);
    const turnId = await runningTurn(
      sessionId,
      'Here is **bold**, <img src=x onerror=alert(1)> and [a trap](javascript:alert(2)) and [docs](https://example.com/docs)',
    );
    await post(owner, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId,
      messages: [
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'I should look at the files first.', signature: 'sig', durationMs: 1200 },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: 'Looking.' },
            { type: 'tool_use', id: 'call_1', name: 'Execute', input: { command: 'ls -la' } },
          ],
        },
        {
          role: 'tool',
          content: [
            { type: 'tool_result', toolUseId: 'call_1', content: 'README.md\npackage.json' },
            { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: PIXEL } },
            { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: 'notes in a file', name: 'notes.txt' } },
          ],
        },
        {
          role: 'system',
          content: [{ type: 'text', text: 'hook ran' }],
          hookEventName: 'PostToolUse',
          hookMatcher: 'Execute',
          hookStatus: 'completed',
          hookCommands: [{ command: './lint.sh', timeout: 30 }],
          hookResults: [{ exitCode: 0, stdout: 'lint ok', stderr: '' }],
        },
      ],
    }).expect(200);

    const page = await signedIn(owner, `/sessions/${sessionId}`);
    await page.getByRole('heading', { name: 'Every block' }).waitFor();
    await page.getByText('test-model-1').waitFor();
    await page.getByText('Running', { exact: true }).waitFor();
    // Markdown: bold rendered; raw HTML shown as text, never an element; the javascript: link has no href.
    await page.locator('.markdown strong', { hasText: 'bold' }).waitFor();
    expect(await page.locator('[onerror], img[src="x"]').count()).toBe(0);
    await page.getByText('<img src=x onerror=alert(1)>').waitFor();
    expect(await page.locator('a[href^="javascript:" i]').count()).toBe(0);
    expect(await page.getByRole('link', { name: 'docs' }).getAttribute('rel')).toBe('noopener noreferrer');
    // Thinking collapsed; the tool input collapsible; the result links to its call.
    const thinking = page.locator('details.thinking');
    expect(await thinking.evaluate((element) => (element as HTMLDetailsElement).open)).toBe(false);
    await page.getByText('Thinking (redacted').waitFor();
    await page.getByText('Tool call Execute').waitFor();
    expect(await page.getByRole('link', { name: 'Execute' }).getAttribute('href')).toBe('#tool-use-call_1');
    expect(await page.locator('img.image').getAttribute('src')).toBe(`data:image/png;base64,${PIXEL}`);
    await page.getByText('notes.txt').waitFor();
    await page.getByText('PostToolUse').waitFor();
    await page.getByText('./lint.sh').waitFor();
    // 35 messages: the newest 30 are shown; the first ones come with "Earlier messages".
    expect(await page.getByText('Old message 1', { exact: true }).count()).toBe(0);
    accessibility.push(...(await checkPage(page, 'session-view')));
    await page.getByRole('button', { name: 'Earlier messages' }).click();
    await page.getByText('Old message 1', { exact: true }).waitFor();
    await page.close();
  });

  it('names a custom model by its displayName wherever the session shows the model, its id kept in the tooltip', async () => {
    const customModels = [
      { id: 'team-llama', model: 'llama-3.1-70b', baseUrl: 'https://llm.example.com/v1', apiKey: 'sk-team-0000', displayName: 'Team Llama' },
    ];
    await t
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(owner.auth)
      .send({ settings: { customModels, modelPolicy: { allowCustomModels: true } } })
      .expect(200);
    const sessionId = await newSession(owner, { title: 'Named model', sessionSettings: { model: 'team-llama' } });
    const turnId = await runningTurn(sessionId, 'hello');
    await post(owner, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId,
      messages: [{ role: 'assistant', modelId: 'team-llama', content: [{ type: 'text', text: 'Hi.' }] }],
    }).expect(200);
    const page = await signedIn(owner, `/sessions/${sessionId}`);
    await page.getByText('Hi.').waitFor();
    await expect(page.getByTestId('session-model').textContent()).resolves.toBe('Team Llama');
    const named = page.locator('.message-model');
    await expect(named.textContent()).resolves.toBe('Team Llama');
    await expect(named.getAttribute('title')).resolves.toBe('team-llama');
    await page.close();
  });

  it("shows the agent's plan: the latest TodoWrite as the session's plan, each change arriving live, every one in the conversation", async () => {
    const sessionId = await newSession(owner, { title: 'Planned work' });
    const turnId = await runningTurn(sessionId, 'Upgrade the dependencies.');
    const plan = (id: string, todos: Array<{ content: string; status: string; activeForm?: string }>) =>
      post(owner, `/api/v0/agent/sessions/${sessionId}/messages`, {
        turnId,
        messages: [{ role: 'assistant', modelId: 'model-a', content: [{ type: 'tool_use', id, name: 'TodoWrite', input: { todos } }] }],
      }).expect(200);
    await plan('plan-1', [
      { content: 'Read the lockfile', status: 'in_progress', activeForm: 'Reading the lockfile' },
      { content: 'Run the tests', status: 'pending' },
    ]);
    const page = await signedIn(owner, `/sessions/${sessionId}`);
    const current = page.getByTestId('session-plan');
    await current.getByText('Reading the lockfile').waitFor();
    const statuses = () =>
      current.locator('.plan-item').evaluateAll((items) => items.map((item) => `${item.getAttribute('data-status')}: ${item.textContent}`));
    await expect(statuses()).resolves.toEqual(['in_progress: ▶ Reading the lockfile (under way)', 'pending: ○ Run the tests (to do)']);
    // The next plan arrives on the event stream: the session's plan follows, and the conversation keeps both.
    await plan('plan-2', [
      { content: 'Read the lockfile', status: 'completed' },
      { content: 'Run the tests', status: 'in_progress', activeForm: 'Running the tests' },
    ]);
    await current.getByText('Running the tests').waitFor();
    await expect(statuses()).resolves.toEqual(['completed: ✓ Read the lockfile (done)', 'in_progress: ▶ Running the tests (under way)']);
    await expect(page.locator('.messages .plan').count()).resolves.toBe(2);
    accessibility.push(...(await checkPage(page, 'session-plan')));
    await page.close();
  });

  it('live: a message added through the API, the status, an approval answered in the browser, and an interrupt, all without reload', async () => {
    const sessionId = await newSession(owner, { title: 'Live one', sessionSettings: { toolApproval: { tools: ['Execute'] } } });
    const page = await signedIn(owner, `/sessions/${sessionId}`);
    await page.getByText('Live: new messages').waitFor();
    // Added elsewhere, seen here.
    const turnId = await runningTurn(sessionId, 'Added through the API');
    await page.getByText('Added through the API').waitFor();
    await page.getByTestId('session-status').filter({ hasText: 'Running' }).waitFor();

    const asked = await post(owner, `/api/v0/agent/sessions/${sessionId}/tool-approvals`, {
      turnId,
      toolName: 'Execute',
      summary: 'git push origin main',
      input: { command: 'git push origin main' },
    }).expect(201);
    const approvalId = asked.body.toolApproval.approvalId as string;
    await page.getByRole('heading', { name: 'Waiting for your approval' }).waitFor();
    await page.getByLabel('Message to the agent (optional)').fill('not on a Friday');
    await page.getByRole('button', { name: 'Deny Execute: git push origin main' }).click();
    await page.getByRole('heading', { name: 'Waiting for your approval' }).waitFor({ state: 'detached' });
    const decided = await t.http().get(`/api/v0/agent/sessions/${sessionId}/tool-approvals/${approvalId}?turnId=${turnId}`).set(owner.auth).expect(200);
    expect(decided.body.toolApproval).toMatchObject({ status: 'denied', message: 'not on a Friday', resolvedBy: { userId: owner.userId } });

    // An agent's reply arrives live too.
    await post(owner, `/api/v0/agent/sessions/${sessionId}/messages`, {
      turnId,
      messages: [{ role: 'assistant', content: [{ type: 'text', text: 'The agent replies live' }] }],
    }).expect(200);
    await page.getByText('The agent replies live').waitFor();

    await page.getByRole('button', { name: 'Interrupt the agent' }).click();
    await page.getByText(/stopping \(interrupted/).waitFor();
    const session = await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth).expect(200);
    expect(session.body.interruptedAt).toEqual(expect.any(Number));
    await post(owner, `/api/v0/agent/sessions/${sessionId}/end-turn`, { turnId }).expect(200);
    await page.getByTestId('session-status').filter({ hasText: 'Idle' }).waitFor();
    await page.close();
  });

  it("adds a message with an attachment from the file button; the server's limits are shown; a refused file is named", async () => {
    const sessionId = await newSession(owner, { title: 'Composer' });
    const page = await signedIn(owner, `/sessions/${sessionId}`);
    await page.getByText('Up to 200,000 characters').waitFor();
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('Please read **this** file');
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach files…' }).click();
    await (
      await chooser
    ).setFiles([
      { name: 'notes.md', mimeType: 'text/markdown', buffer: Buffer.from('# Notes\nship it') },
      { name: 'tool.exe', mimeType: 'application/x-msdownload', buffer: Buffer.from('MZ') },
    ]);
    await page.getByText('tool.exe (application/x-msdownload) cannot be attached').waitFor();
    await page.getByRole('list', { name: 'Attachments' }).getByText('notes.md').waitFor();
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.message-user').filter({ hasText: 'Please read this file' }).waitFor();
    const messages = await t.http().get(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).expect(200);
    expect(messages.body.messages[0].content).toEqual([
      { type: 'text', text: 'Please read **this** file' },
      { type: 'document', source: { type: 'text', mediaType: 'text/plain', data: '# Notes\nship it', name: 'notes.md', mime: 'text/markdown' } },
    ]);
    await page.close();
  });

  it("a guest reads their organization's session view and list with no write control", async () => {
    const guest = await createUser(t, Role.Guest, { id: owner.organizationId, slug: owner.organizationSlug });
    const page = await signedIn(guest, '/sessions');
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await page
      .getByText(/No sessions yet|Guests read only/)
      .first()
      .waitFor();
    expect(await page.getByRole('button', { name: 'New session' }).count()).toBe(0);
    expect(await page.getByLabel('Computer').count()).toBe(0);
    await page.close();
  });
});
