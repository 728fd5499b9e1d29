import type { Browser } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { createGitRepo, reposRoot } from '../utils/git-fixtures';
import { createUser, type TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, signedInTab } from './browser';
import { join } from 'node:path';

/**
 * The Computers pages in Chromium against the real server: a BYOM computer made in the page with its agent token
 * shown once (and working), a managed computer whose provisioning moves on the page live (the event stream, no
 * reload), retry, delete; who sees what.
 */
(browserAvailable() ? describe : describe.skip)('Console: Computers', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let root: string;
  const accessibility: string[] = [];
  const csp: string[] = [];

  beforeAll(async () => {
    root = await reposRoot();
    [t, browser] = await Promise.all([startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_AGENTS: 'off', PROVISIONING_POLL_MS: '100' }), launchChromium()]);
    base = baseUrlOf(t);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const orgOf = (user: TestUser) => ({ id: user.organizationId, slug: user.organizationSlug });

  it('a BYOM computer: made in the page, its agent token shown once (and working), the agent command, delete after a confirmation', async () => {
    const owner = await createUser(t, Role.Owner);
    const page = await signedInTab(browser, base, owner.key, csp);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Computers' }).click();
    await page.getByRole('heading', { name: 'Computers', level: 1 }).waitFor();
    await page.getByText('No computers yet.').waitFor();
    accessibility.push(...(await checkPage(page, 'computers-empty')));

    // The API's refusal in its words: no name, no user.
    const refused = page.waitForResponse((response) => response.url().endsWith('/api/v0/computers') && response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Create computer' }).click();
    const refusal = await refused;
    expect(refusal.status()).toBe(400);
    const alert = page.getByRole('alert');
    expect(await alert.textContent()).toContain(((await refusal.json()) as { detail: string }).detail);
    expect(await alert.textContent()).toContain(refusal.headers()['x-request-id']);

    await page.getByLabel('Name').fill('Olivia laptop');
    await page.getByLabel('User the agent runs as').fill('olivia');
    await page.getByRole('button', { name: 'Create computer' }).click();
    await page.getByRole('heading', { name: 'Olivia laptop', level: 1 }).waitFor();
    const computerId = new URL(page.url()).pathname.split('/').pop()!;
    const token = await page.getByLabel('The agent token').inputValue();
    expect(token).toMatch(/^cpt_/);
    const command = page.getByLabel("The agent's command");
    expect(await command.textContent()).toContain(`AGENT_TOKEN=${token} `);
    // BASE_URL, where the agent channel is (the computer's relayAgentUrl), which may differ from where the console is.
    const { relayAgentUrl } = (await t.http().get(`/api/v0/computers/${computerId}`).set(owner.auth).expect(200)).body as { relayAgentUrl: string };
    expect(await command.textContent()).toContain(`--url ${relayAgentUrl.replace(/\/api\/v0\/agent$/, '')} `);
    expect(await command.textContent()).toContain(`--computer ${computerId}`);
    expect(await page.getByRole('link', { name: 'Sessions on Olivia laptop' }).getAttribute('href')).toBe(`/sessions?computerId=${computerId}`);
    accessibility.push(...(await checkPage(page, 'computer-token-once')));

    // The token is the computer's agent's credential: its agent connects with it.
    const connected = await t.http().post('/api/v0/agent/connect').set('Authorization', `Bearer ${token}`).send({ hostname: 'olivia-laptop' });
    expect(connected.status).toBe(200);

    // Shown once: not after "Done", not after a reload.
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    expect(await page.getByLabel('The agent token').count()).toBe(0);
    await page.reload();
    await page.getByRole('heading', { name: 'Olivia laptop', level: 1 }).waitFor();
    await page.getByText('olivia-laptop').waitFor();
    expect(await page.content()).not.toContain(token);
    expect(await page.getByLabel("The agent's command").textContent()).toContain('"$AGENT_TOKEN"');
    accessibility.push(...(await checkPage(page, 'computer-byom')));

    // Delete: Escape cancels, confirming deletes.
    await page.getByRole('button', { name: 'Delete computer' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete “Olivia laptop”?' });
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await t.http().get(`/api/v0/computers/${computerId}`).set(owner.auth)).status).toBe(200);
    await page.getByRole('button', { name: 'Delete computer' }).click();
    await dialog.getByRole('button', { name: 'Delete computer' }).click();
    await page.getByRole('heading', { name: 'Computers', level: 1 }).waitFor();
    expect((await t.http().get(`/api/v0/computers/${computerId}`).set(owner.auth)).status).toBe(404);
    expect((await t.http().post('/api/v0/agent/connect').set('Authorization', `Bearer ${token}`).send({ hostname: 'x' })).status).toBe(401);
    await page.close();
  });

  it('a managed computer: it appears, fails and, retried, provisions on the open page, live', async () => {
    const owner = await createUser(t, Role.Owner);
    const page = await signedInTab(browser, base, owner.key, csp);
    await page.goto('/computers');
    await page.getByText('Live: changes appear as they happen.').waitFor();

    // Made elsewhere (the API), with a repository that is not there yet: the row appears, then turns to Error.
    const repo = join(root, `later-${Date.now()}`);
    const created = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'Web workspace', provider: 'local', repos: [repo] })
      .expect(201);
    const row = page.getByRole('row', { name: /Web workspace/ });
    await row.waitFor();
    await row.getByText('Error').waitFor({ timeout: 30_000 });

    await row.getByRole('link', { name: 'Web workspace' }).click();
    await page.getByRole('heading', { name: 'Web workspace', level: 1 }).waitFor();
    const clone = page.locator('li[data-step="clone-repos"]');
    await clone.getByText('Failed', { exact: true }).waitFor();
    expect(await clone.textContent()).toContain('git clone failed');
    accessibility.push(...(await checkPage(page, 'computer-failed')));

    // The repository exists now: Retry answers "provisioning"; what follows reaches the page through the stream only.
    await createGitRepo(root, repo.split('/').pop()!);
    const retried = page.waitForResponse((response) => response.url().endsWith('/retry'));
    await page.getByRole('button', { name: 'Retry provisioning' }).click();
    expect(((await (await retried).json()) as { status: string }).status).toBe('provisioning');
    await page.getByRole('status').getByText('Active').waitFor({ timeout: 30_000 });
    expect(await page.locator('li[data-step]').evaluateAll((steps) => steps.map((step) => step.getAttribute('data-status')))).toEqual([
      'completed',
      'completed',
    ]);
    expect(await page.getByRole('button', { name: 'Retry provisioning' }).count()).toBe(0);
    expect((await t.http().get(`/api/v0/computers/${created.body.id}`).set(owner.auth)).body.status).toBe('active');
    // The page reads the computer when an event says it changed, and does not poll: nothing changes, nothing is asked.
    const reads: string[] = [];
    page.on('request', (request) => request.url().includes(`/api/v0/computers/${created.body.id}`) && reads.push(request.url()));
    await page.waitForTimeout(1_000);
    expect(reads).toEqual([]);
    expect(await page.getByText('The server runs this computer’s agent itself').count()).toBe(1);
    accessibility.push(...(await checkPage(page, 'computer-active')));
    await page.close();
  });

  it('the event stream: CRLF lines and comments parsed, resumed after a drop with Last-Event-ID, restarted after a 410', async () => {
    const owner = await createUser(t, Role.Owner);
    const created = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'Stream box', provider: 'byom', hostId: crypto.randomUUID(), remoteUser: 'dev' })
      .expect(201);
    const page = await signedInTab(browser, base, owner.key, csp);
    // The server's stream is stood in for twice: one event then the end (a drop), then 410 for the resume point.
    const resumeHeaders: (string | null)[] = [];
    const reads: string[] = [];
    let readsBefore410 = -1;
    const event = {
      id: 'e1',
      seq: 7,
      type: 'computer.status_changed',
      occurredAt: Date.now(),
      organizationId: owner.organizationId,
      sessionId: null,
      target: { kind: 'computer', id: created.body.id },
      actor: null,
      data: { computerId: created.body.id, provider: 'byom', from: 'active', to: 'active', step: null },
    };
    await page.route('**/api/v0/events?*', async (route) => {
      const header = route.request().headers()['last-event-id'] ?? null;
      resumeHeaders.push(header);
      if (resumeHeaders.length === 1) {
        await route.fulfill({
          status: 200,
          contentType: 'text/event-stream',
          body: `retry: 50\r\n: connected\r\n\r\nid: 7\r\nevent: computer.status_changed\r\ndata: ${JSON.stringify(event)}\r\n\r\n`,
        });
      } else if (resumeHeaders.length === 2) {
        readsBefore410 = reads.length;
        await route.fulfill({
          status: 410,
          contentType: 'application/json',
          body: JSON.stringify({ status: 410, title: 'Gone', detail: 'expired', metadata: { code: 'event_expired', oldestId: 9 } }),
        });
      } else {
        await route.continue();
      }
    });
    page.on('request', (request) => request.url().endsWith(`/api/v0/computers/${created.body.id}`) && reads.push(request.url()));
    await page.goto(`/computers/${created.body.id}`);
    await page.getByRole('heading', { name: 'Stream box', level: 1 }).waitFor();
    for (let i = 0; i < 100 && resumeHeaders.length < 3; i++) await page.waitForTimeout(50);
    // First without a resume point; then from the event it got (7); then, the point expired, afresh.
    expect(resumeHeaders.slice(0, 3)).toEqual([null, '7', null]);
    await page.getByText('Live: changes appear as they happen.').waitFor();
    // The 410 lost events: the page read the computer again rather than trust what it showed.
    expect(readsBefore410).toBeGreaterThan(0);
    expect(reads.length).toBeGreaterThan(readsBefore410);
    await page.close();
  });

  it('a key revoked while the page follows the stream: the stream ends, and the tab is signed out saying why', async () => {
    const member = await createUser(t, Role.Member);
    const page = await signedInTab(browser, base, member.key, csp);
    await page.goto('/computers');
    await page.getByText('Live: changes appear as they happen.').waitFor();
    await t.http().delete(`/settings/api-keys/${member.apiKeyId}`).set(member.auth).expect(200);
    await page.getByText('Your key stopped working').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.close();
  });

  it('a member sees their own computers only; a guest gets neither the link nor the page', async () => {
    const owner = await createUser(t, Role.Owner);
    const member = await createUser(t, Role.Member, orgOf(owner));
    const guest = await createUser(t, Role.Guest, orgOf(owner));
    const byom = (name: string) => ({ name, provider: 'byom', hostId: crypto.randomUUID(), remoteUser: 'dev' });
    await t.http().post('/api/v0/computers').set(owner.auth).send(byom('Owner box')).expect(201);
    await t.http().post('/api/v0/computers').set(member.auth).send(byom('Member box')).expect(201);

    const page = await signedInTab(browser, base, member.key, csp);
    await page.goto('/computers');
    await page.getByRole('row', { name: /Member box/ }).waitFor();
    expect(await page.getByRole('row', { name: /Owner box/ }).count()).toBe(0);
    accessibility.push(...(await checkPage(page, 'computers-member')));
    await page.close();

    expect((await t.http().get('/api/v0/computers').set(guest.auth)).status).toBe(403);
    const guestPage = await signedInTab(browser, base, guest.key, csp);
    expect(await guestPage.getByRole('link', { name: 'Computers' }).count()).toBe(0);
    await guestPage.goto('/computers');
    await guestPage.getByRole('heading', { name: 'Computers: not for your role' }).waitFor();
    expect(await guestPage.getByRole('button', { name: 'Create computer' }).count()).toBe(0);
    await guestPage.close();
  });

  it('every page passed axe-core and the Content-Security-Policy', () => {
    expect(accessibility).toEqual([]);
    expect(csp).toEqual([]);
  });
});
