import type { Browser } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { createUser, type TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, signedInTab } from './browser';

/**
 * The Members page in Chromium against the real server: what an owner and a manager may do there, checked through the
 * API afterwards; the API's refusals shown in its words; members and guests get neither the page nor its link.
 */
(browserAvailable() ? describe : describe.skip)('Console: Members', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
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

  const orgOf = (user: TestUser) => ({ id: user.organizationId, slug: user.organizationSlug });
  const membersOf = async (user: TestUser) =>
    (await t.http().get('/api/v0/organization/members?limit=100').set(user.auth).expect(200)).body.members as {
      id: string;
      email: string;
      role: string;
      kind: string;
      name: string;
    }[];

  it('an owner adds a member, changes their role and removes them after a confirmation; the API agrees at each step', async () => {
    const owner = await createUser(t, Role.Owner);
    const page = await signedInTab(browser, base, owner.key, csp);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Members' }).click();
    await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
    await page.getByRole('row', { name: /A owner.*you/ }).waitFor();
    accessibility.push(...(await checkPage(page, 'members')));

    // The API's refusal, in its words: an address that is not one.
    const refused = page.waitForResponse((response) => response.url().endsWith('/api/v0/organization/members') && response.request().method() === 'POST');
    await page.getByLabel('Email').fill('not-an-address');
    await page.getByLabel('Name', { exact: true }).fill('Nobody');
    await page.getByRole('button', { name: 'Add member' }).click();
    const refusal = await refused;
    expect(refusal.status()).toBe(400);
    const alert = page.getByRole('alert');
    expect(await alert.textContent()).toContain(((await refusal.json()) as { detail: string }).detail);
    expect(await alert.textContent()).toContain(refusal.headers()['x-request-id']);
    accessibility.push(...(await checkPage(page, 'members-error')));

    await page.getByLabel('Email').fill('grace@acme.example');
    await page.getByLabel('Name', { exact: true }).fill('Grace Hopper');
    await page.getByLabel('Role', { exact: true }).selectOption({ label: 'Manager' });
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByText('Grace Hopper (grace@acme.example) was added as Manager.').waitFor();
    const row = page.getByRole('row', { name: /Grace Hopper/ });
    await row.waitFor();
    const grace = (await membersOf(owner)).find((member) => member.email === 'grace@acme.example');
    expect(grace).toMatchObject({ name: 'Grace Hopper', role: 'manager', kind: 'human' });

    // Change the role: nothing is sent until Save.
    await row.getByLabel('Role of Grace Hopper').selectOption('guest');
    expect((await membersOf(owner)).find((member) => member.id === grace!.id)?.role).toBe('manager');
    await row.getByRole('button', { name: 'Save the role of Grace Hopper' }).click();
    await row.getByRole('button', { name: 'Save the role of Grace Hopper' }).waitFor({ state: 'detached' });
    expect((await membersOf(owner)).find((member) => member.id === grace!.id)?.role).toBe('guest');

    // Remove: Escape cancels; confirming removes.
    await row.getByRole('button', { name: 'Remove Grace Hopper' }).click();
    const dialog = page.getByRole('dialog', { name: 'Remove Grace Hopper?' });
    await dialog.waitFor();
    accessibility.push(...(await checkPage(page, 'members-remove-dialog')));
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await membersOf(owner)).some((member) => member.id === grace!.id)).toBe(true);
    await row.getByRole('button', { name: 'Remove Grace Hopper' }).click();
    await dialog.getByRole('button', { name: 'Remove member' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await row.waitFor({ state: 'detached' });
    expect((await membersOf(owner)).some((member) => member.id === grace!.id)).toBe(false);
    await page.close();
  });

  it('the last owner: the API refuses to demote them, and the page says so in its words', async () => {
    const owner = await createUser(t, Role.Owner);
    const page = await signedInTab(browser, base, owner.key, csp);
    await page.goto('/members');
    const row = page.getByRole('row', { name: /A owner/ });
    await row.getByLabel('Role of A owner').selectOption('member');
    const answer = page.waitForResponse((response) => response.request().method() === 'PATCH');
    await row.getByRole('button', { name: 'Save the role of A owner' }).click();
    const response = await answer;
    expect(response.status()).toBe(409);
    const alert = row.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(((await response.json()) as { detail: string }).detail);
    // The select is back on the role the member still has.
    expect(await row.getByLabel('Role of A owner').inputValue()).toBe('owner');
    expect((await membersOf(owner))[0].role).toBe('owner');
    await page.close();
  });

  it('a manager may not touch an owner nor give the owner role; the list pages as the API pages', async () => {
    const owner = await createUser(t, Role.Owner);
    const manager = await createUser(t, Role.Manager, orgOf(owner));
    await Promise.all(Array.from({ length: 21 }, (_, i) => createUser(t, Role.Member, orgOf(owner), `bulk-${i}-${Date.now()}@example.test`)));
    const page = await signedInTab(browser, base, manager.key, csp);
    await page.goto('/members');
    await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
    // 23 members: 20 on the first page, the rest on "Show more".
    await page.getByRole('button', { name: 'Show more members' }).click();
    const ownerRow = page.getByRole('row', { name: /A owner/ });
    await ownerRow.waitFor();
    expect(await page.getByRole('row').count()).toBe(23 + 1);
    expect(await ownerRow.getByRole('combobox').count()).toBe(0);
    expect(await ownerRow.getByRole('button').count()).toBe(0);
    const roles = await page.getByLabel('Role', { exact: true }).locator('option').allTextContents();
    expect(roles).toEqual(['Manager', 'Member', 'Guest']);
    // The API agrees: a manager cannot remove an owner.
    expect((await t.http().delete(`/api/v0/organization/members/${owner.userId}`).set(manager.auth)).status).toBe(403);
    accessibility.push(...(await checkPage(page, 'members-manager')));
    await page.close();
  });

  it('a service account added in the page gets a key there, shown once, that works as it', async () => {
    const owner = await createUser(t, Role.Owner);
    const page = await signedInTab(browser, base, owner.key, csp);
    await page.goto('/members');
    await page.getByLabel('Email').fill('nightly@acme.example');
    await page.getByLabel('Name', { exact: true }).fill('Nightly bot');
    await page.getByLabel('Kind', { exact: true }).selectOption({ label: 'Service account' });
    await page.getByRole('button', { name: 'Add member' }).click();
    const row = page.getByRole('row', { name: /Nightly bot/ });
    await row.getByText('Service account').waitFor();
    // People make their own keys: only the service account's row offers one.
    expect(await page.getByRole('button', { name: /^New key for/ }).count()).toBe(1);

    await row.getByRole('button', { name: 'New key for Nightly bot' }).click();
    const dialog = page.getByRole('dialog', { name: 'New key for Nightly bot' });
    await dialog.getByLabel('Key name').fill('Nightly pipeline');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'New key “Nightly pipeline” for Nightly bot' }).waitFor();
    const key = await page.getByLabel('The key').inputValue();
    // The focus is on the key, ready to copy.
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.value)).toBe(key);
    accessibility.push(...(await checkPage(page, 'members-service-account-key')));
    const me = await t.http().get('/api/v0/me').set('Authorization', `Bearer ${key}`).expect(200);
    expect(me.body.user).toMatchObject({ email: 'nightly@acme.example', role: 'member' });
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    expect(await page.content()).not.toContain(key);
    await page.close();
  });

  it('members and guests get neither the link nor the page (the API refuses them the list)', async () => {
    const owner = await createUser(t, Role.Owner);
    for (const role of [Role.Member, Role.Guest]) {
      const user = await createUser(t, role, orgOf(owner));
      expect((await t.http().get('/api/v0/organization/members').set(user.auth)).status).toBe(403);
      const page = await signedInTab(browser, base, user.key, csp);
      expect(await page.getByRole('link', { name: 'Members' }).count()).toBe(0);
      await page.goto('/members');
      await page.getByRole('heading', { name: 'Members: not for your role' }).waitFor();
      expect(await page.getByRole('button', { name: 'Add member' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: /Remove/ }).count()).toBe(0);
      if (role === Role.Guest) accessibility.push(...(await checkPage(page, 'members-guest')));
      await page.close();
    }
  });

  it('every page passed axe-core and the Content-Security-Policy', () => {
    expect(accessibility).toEqual([]);
    expect(csp).toEqual([]);
  });
});
