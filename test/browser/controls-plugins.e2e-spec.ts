import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, signedInTab } from './browser';

const CONTROLS = '/api/v0/organization/enterprise-controls';
const SHA = 'c'.repeat(40);

/**
 * The controls page's Plugins section in a real Chromium against the real server: the catalog an agent reported
 * (through the agent channel, with its computer's token), each plugin's switch as `enabledPlugins` has it, a marketplace
 * with no catalog yet, and switches that change `enabledPlugins` through the form's save.
 */
(browserAvailable() ? describe : describe.skip)('The plugins of the controls page in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let owner: TestUser;
  const problems: string[] = [];

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestApp(), launchChromium()]);
    owner = await createUser(t, Role.Owner);
    await t
      .http()
      .patch(CONTROLS)
      .set(owner.auth)
      .send({
        settings: {
          extraKnownMarketplaces: { team: { source: 'github', repo: 'acme/agent-plugins', ref: 'main' }, later: { source: 'gitlab', repo: 'acme/later' } },
          enabledPlugins: { 'review@team': true },
        },
      })
      .expect(200);
    const computer = await t
      .http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' })
      .expect(201);
    await t
      .http()
      .post('/api/v0/agent/plugin-catalogs')
      .set({ Authorization: `Bearer ${computer.body.agentToken}` })
      .send({
        marketplace: 'team',
        outcome: 'read',
        commit: SHA,
        plugins: [
          { name: 'review', description: 'Code review commands.', version: '1.4.0', author: 'Platform team', category: 'code review' },
          { name: 'lint', description: 'Lints the files a change touches.' },
        ],
      })
      .expect(204);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const enabledPlugins = async () => (await t.http().get(CONTROLS).set(owner.auth).expect(200)).body.settings.enabledPlugins as Record<string, boolean>;

  it("lists each marketplace's plugins with their switches, and toggling them changes enabledPlugins when the controls are saved", async () => {
    const page = await signedInTab(browser, baseUrlOf(t), owner.key, problems);
    await page.goto('/settings/controls');
    await page.getByRole('heading', { name: 'Plugins' }).waitFor();
    const team = page.getByRole('group', { name: 'team', exact: true });
    const review = team.getByRole('switch', { name: 'review' });
    const lint = team.getByRole('switch', { name: 'lint' });
    await review.waitFor();
    await expect(review.isChecked()).resolves.toBe(true);
    await expect(lint.isChecked()).resolves.toBe(false);
    await team.getByText('Code review commands. (code review, by Platform team)').waitFor();
    await team.getByText('1.4.0').waitFor();
    await team.getByText(/^At commit cccccccccccc, reported by/).waitFor();
    await page.getByRole('group', { name: 'later', exact: true }).getByText('No catalog yet: reported when an agent next runs a turn.').waitFor();
    problems.push(...(await checkPage(page, 'controls-plugins')));

    // On, then off again: nothing to save.
    await lint.check();
    await page.getByText('1 unsaved change.').waitFor();
    await lint.uncheck();
    await page.getByText('No unsaved changes.').waitFor();

    await lint.check();
    await review.uncheck();
    // The form's own field of enabledPlugins shows the same draft.
    await expect(page.getByRole('checkbox', { name: 'lint@team' }).isChecked()).resolves.toBe(true);
    await page.getByText('2 unsaved changes.').waitFor();
    const saved = page.waitForResponse((response) => response.url().endsWith(CONTROLS) && response.request().method() === 'PATCH');
    await page.getByRole('button', { name: 'Save controls' }).click();
    const response = await saved;
    expect(response.status()).toBe(200);
    expect(JSON.parse(response.request().postData()!)).toEqual({ settings: { enabledPlugins: { 'review@team': false, 'lint@team': true } } });
    await page.getByText(/Saved: revision \d+ is in force./).waitFor();
    expect(await enabledPlugins()).toEqual({ 'review@team': false, 'lint@team': true });

    // Read again: the switches as saved.
    await page.reload();
    await review.waitFor();
    await expect(review.isChecked()).resolves.toBe(false);
    await expect(lint.isChecked()).resolves.toBe(true);
    await page.close();
  });

  it('every page passed axe-core (no serious or critical violation) and the Content-Security-Policy', () => {
    expect(problems).toEqual([]);
  });
});
