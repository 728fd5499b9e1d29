/// <reference lib="dom" />
// Code passed to page.evaluate() runs in the browser.
import type { Browser, Page } from 'playwright-core';
import { Role, SetupService } from '../../src/modules/auth';
import { createOrganization, createUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, openConsole, seriousAxeViolations } from './browser';

/**
 * The web console in a real Chromium against the real server on PGlite: what a person does, by mouse and by keyboard,
 * with axe-core and screenshots (light, dark, 375 px, 1280 px) on every page, and no Content-Security-Policy violation.
 */
(browserAvailable() ? describe : describe.skip)('Web console in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  /** Serious or critical axe-core violations, page by page (expected none). */
  const accessibility: string[] = [];
  const csp: string[] = [];

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestApp(), launchChromium()]);
    base = baseUrlOf(t);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const violationsOf = new WeakMap<Page, string[]>();
  const cspOf = (page: Page) => violationsOf.get(page)!;

  async function session(): Promise<Page> {
    const opened = await openConsole(browser, base);
    violationsOf.set(opened.page, opened.cspViolations);
    opened.page.on('close', () => csp.push(...opened.cspViolations));
    return opened.page;
  }

  async function signInWith(page: Page, key: string): Promise<void> {
    await page.goto('/sign-in');
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  }

  const header = (page: Page) => page.getByLabel('Signed in as');

  it('first run on an empty database: setup, the owner key shown once, then signed in with it', async () => {
    const page = await session();
    await page.goto('/');
    // Not signed in: the sign-in page, which offers the setup because the server has no organization.
    await page.getByRole('heading', { name: 'Set up this server' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    accessibility.push(...(await checkPage(page, 'setup')));

    // The token the server printed in its log at start.
    const token = (t.app.get(SetupService) as unknown as { token: string }).token;
    await page.getByLabel('Setup token').fill(token);
    await page.getByLabel('Name', { exact: true }).first().fill('Acme Rockets');
    await page.getByLabel('Short name (slug)').fill('acme');
    await page.getByRole('group', { name: 'Owner (you)' }).getByLabel('Name').fill('Ada Owner');
    await page.getByLabel('Email').fill('ada@acme.example');
    await page.getByRole('button', { name: 'Create the organization' }).click();

    await page.getByRole('heading', { name: 'Acme Rockets is ready' }).waitFor();
    const key = await page.getByLabel('The key').inputValue();
    expect(key).toMatch(/^apk_/);
    await page.getByText('it is shown only this once').waitFor();
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    accessibility.push(...(await checkPage(page, 'setup-key-once')));

    await page.getByRole('button', { name: 'I have stored it: continue' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await expect(header(page).textContent()).resolves.toMatch(/Acme Rockets.*Owner.*Ada Owner/);
    // The key is in this tab's sessionStorage only: not in localStorage, not in the URL, no longer on the page.
    const storage = await page.evaluate(() => ({ session: Object.values(sessionStorage), local: Object.values(localStorage) }));
    expect(storage.session).toEqual([key]);
    expect(storage.local.join()).not.toContain(key);
    expect(page.url()).not.toContain(key);
    expect(await page.content()).not.toContain(key);
    accessibility.push(...(await checkPage(page, 'overview')));

    // The theme toggle overrides the system's scheme, and the choice outlives a reload.
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const light = await background();
    await page.getByRole('button', { name: 'Dark theme' }).click();
    expect(await background()).not.toBe(light);
    await page.reload();
    await page.getByRole('button', { name: 'Light theme' }).waitFor();
    expect(await background()).not.toBe(light);
    await page.getByRole('button', { name: 'Light theme' }).click();
    expect(await background()).toBe(light);

    // A reload keeps the tab signed in; the setup is no longer offered.
    await page.reload();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await expect(
      t
        .http()
        .get('/api/v0/setup')
        .then((res) => res.body),
    ).resolves.toEqual({ needed: false });
    await page.close();
  });

  it('signs in with a key, by keyboard alone, and shows the organization, role and name', async () => {
    const organization = await createOrganization(t);
    const member = await createUser(t, Role.Member, organization);
    const page = await session();
    await page.goto('/settings/api-keys');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    accessibility.push(...(await checkPage(page, 'sign-in')));
    // Tab to the field (focus is visible), type, Enter.
    for (let i = 0; i < 10 && !(await page.evaluate(() => document.activeElement?.getAttribute('type') === 'password')); i++) await page.keyboard.press('Tab');
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
    await page.keyboard.type(member.key);
    await page.keyboard.press('Enter');
    // Back where the navigation was going.
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/settings/api-keys');
    await expect(header(page).textContent()).resolves.toMatch(new RegExp(`Org ${organization.slug}.*Member.*A member`));
    await page.close();
  });

  it("a key that does not work: the API's own words and its request id", async () => {
    const page = await session();
    await page.goto('/sign-in');
    await page.getByLabel('API key').fill(`apk_${'x'.repeat(43)}`);
    const answer = page.waitForResponse((response) => response.url().endsWith('/api/v0/me'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    const response = await answer;
    const body = (await response.json()) as { title: string; detail: string };
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const text = await alert.textContent();
    expect(response.status()).toBe(401);
    expect(text).toContain(body.title);
    expect(text).toContain(body.detail);
    expect(text).toContain(response.headers()['x-request-id']);
    accessibility.push(...(await checkPage(page, 'sign-in-error')));
    await page.close();
  });

  it('creates a key (shown once, copied), lists it with its expiry, revokes it after a confirmation', async () => {
    const owner = await createUser(t, Role.Owner);
    const page = await session();
    await signInWith(page, owner.key);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    // The key this tab uses is marked.
    await page.getByRole('row', { name: /this session/ }).waitFor();
    accessibility.push(...(await checkPage(page, 'api-keys')));

    // An API error, as the API words it, with its request id: an empty name.
    const refused = page.waitForResponse((response) => response.url().endsWith('/settings/api-keys') && response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Create key' }).click();
    const refusal = await refused;
    expect(refusal.status()).toBe(400);
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(((await refusal.json()) as { detail: string }).detail);
    expect(await alert.textContent()).toContain(refusal.headers()['x-request-id']);
    accessibility.push(...(await checkPage(page, 'api-keys-error')));

    await page.getByLabel('Name').fill('CI pipeline');
    await page.getByLabel('Expires').selectOption({ label: 'In 30 days' });
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'New key “CI pipeline”' }).waitFor();
    const key = await page.getByLabel('The key').inputValue();
    expect(key).toMatch(/^apk_/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    accessibility.push(...(await checkPage(page, 'api-keys-created')));
    // It works on the API.
    expect((await t.http().get('/api/v0/me').set('Authorization', `Bearer ${key}`)).status).toBe(200);

    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    const row = page.getByRole('row', { name: /CI pipeline/ });
    await row.waitFor();
    expect(await page.content()).not.toContain(key);
    const expiry = new Date(Date.now() + 30 * 24 * 3600 * 1000).getFullYear().toString();
    expect(await row.textContent()).toContain(expiry);
    expect(await row.textContent()).toContain('Active');

    // Escape cancels the confirmation and gives the focus back to the button.
    await row.getByRole('button', { name: 'Revoke CI pipeline' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke “CI pipeline”?' });
    await dialog.waitFor();
    accessibility.push(...(await checkPage(page, 'api-keys-revoke-dialog')));
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Revoke CI pipeline');
    expect((await t.http().get('/api/v0/me').set('Authorization', `Bearer ${key}`)).status).toBe(200);

    await row.getByRole('button', { name: 'Revoke CI pipeline' }).click();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await row.getByText('Revoked').waitFor();
    expect((await t.http().get('/api/v0/me').set('Authorization', `Bearer ${key}`)).status).toBe(401);
    await page.close();
  });

  it("an owner sees every key of the organization by its user's name and revokes a member's; the list pages as the API pages", async () => {
    const owner = await createUser(t, Role.Owner);
    const organization = { id: owner.organizationId, slug: owner.organizationSlug };
    const member = await createUser(t, Role.Member, organization);
    const page = await session();
    await signInWith(page, owner.key);
    await page.goto('/settings/api-keys');
    await page.getByRole('radio', { name: /Every key of/ }).check();
    // Whose key each is, by name.
    const memberRow = page.getByRole('row').filter({ hasText: 'A member' });
    await memberRow.waitFor();
    expect(await memberRow.getByRole('button', { name: 'Revoke test' }).count()).toBe(1);
    accessibility.push(...(await checkPage(page, 'api-keys-organization')));
    // ...and may revoke it, as the API allows owners and managers.
    await memberRow.getByRole('button', { name: 'Revoke test' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await memberRow.getByText('Revoked').waitFor();
    expect((await t.http().get('/api/v0/me').set(member.auth)).status).toBe(401);
    // 25 more keys of the owner's: the first page holds 20; "Show more keys" fetches the rest.
    const response = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        t
          .http()
          .post('/settings/api-keys')
          .set(owner.auth)
          .send({ name: `bulk ${i}` }),
      ),
    );
    expect(response.every((res) => res.status === 201)).toBe(true);
    await page.getByRole('radio', { name: 'My keys' }).check();
    await page.reload();
    await page.getByRole('row', { name: /bulk 24/ }).waitFor();
    expect(await page.getByRole('row', { name: /bulk/ }).count()).toBe(20);
    await page.getByRole('button', { name: 'Show more keys' }).click();
    await page.getByRole('row', { name: /bulk 0/ }).waitFor();
    expect(await page.getByRole('row', { name: /bulk/ }).count()).toBe(25);
    expect(await page.getByRole('button', { name: 'Show more keys' }).count()).toBe(0);
    await page.close();
  });

  it('a guest sees no create button where the organization restricts keys to managers; a member sees no organization scope', async () => {
    const owner = await createUser(t, Role.Owner);
    const organization = { id: owner.organizationId, slug: owner.organizationSlug };
    const guest = await createUser(t, Role.Guest, organization);
    await t
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(owner.auth)
      .send({ settings: { restrictApiKeyCreationToManagers: true } })
      .expect(200);
    const page = await session();
    await signInWith(page, guest.key);
    await page.goto('/settings/api-keys');
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByText('lets only owners and managers create API keys').waitFor();
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    expect(await page.getByRole('radio').count()).toBe(0);
    await expect(header(page).textContent()).resolves.toMatch(/Guest/);
    accessibility.push(...(await checkPage(page, 'api-keys-guest')));
    await page.close();
  });

  it("an unknown console path shows the console's 404 page", async () => {
    const member = await createUser(t, Role.Member);
    const page = await session();
    await signInWith(page, member.key);
    const answer = await page.goto('/no/such/page');
    expect(answer?.status()).toBe(200);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    expect(await page.getByRole('main').textContent()).toContain('/no/such/page');
    accessibility.push(...(await checkPage(page, 'not-found')));

    // The checks themselves can fail: a button with no name is a critical axe violation, an inline style a CSP one.
    await page.evaluate(() => {
      document.querySelector('main')!.append(document.createElement('button'));
      const style = document.createElement('style');
      style.textContent = 'main { color: red }';
      document.head.append(style);
    });
    expect((await seriousAxeViolations(page)).map((violation) => violation.id)).toContain('button-name');
    for (let i = 0; i < 50 && cspOf(page).length === 0; i++) await page.waitForTimeout(20);
    expect(cspOf(page).join()).toMatch(/style/);
    cspOf(page).length = 0;
    await page.close();
  });

  it('sign out forgets the key: the next page asks for one again', async () => {
    const member = await createUser(t, Role.Member);
    const page = await session();
    await signInWith(page, member.key);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.goto('/settings/api-keys');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.close();
  });

  it('a key revoked elsewhere signs the tab out at its next request', async () => {
    const member = await createUser(t, Role.Member);
    const page = await session();
    await signInWith(page, member.key);
    await t.http().delete(`/settings/api-keys/${member.apiKeyId}`).set(member.auth).expect(200);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await page.getByText('Your key stopped working').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.close();
  });

  it('every page passed axe-core (no serious or critical violation) and the Content-Security-Policy', () => {
    expect(accessibility).toEqual([]);
    expect(csp).toEqual([]);
  });
});
