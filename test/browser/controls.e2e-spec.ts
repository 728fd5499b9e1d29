/// <reference lib="dom" />
// Code passed to page.evaluate() runs in the browser.
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { SecretBox } from '../../src/platform/secrets/secret-box';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, openConsole } from './browser';

const CONTROLS = '/api/v0/organization/enterprise-controls';
const SECRET = 'sk-test-secret-key-9f3a7c21';

/**
 * The enterprise controls pages in a real Chromium against the real server: the form drawn from the server's settings
 * schema, a save becoming a revision, the server's 400 at its field, a conflict when someone saved first (nothing
 * overwritten), secrets never shown, the history's diff, and members kept out as the API keeps them out.
 */
(browserAvailable() ? describe : describe.skip)('Enterprise controls in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let owner: TestUser;
  let manager: TestUser;
  const problems: string[] = [];

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestApp(), launchChromium()]);
    base = baseUrlOf(t);
    const organization = await createOrganization(t);
    owner = await createUser(t, Role.Owner, organization);
    manager = await createUser(t, Role.Manager, organization);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function signedIn(user: TestUser, path: string): Promise<Page> {
    const { page, cspViolations } = await openConsole(browser, base);
    page.on('close', () => problems.push(...cspViolations));
    await page.goto('/sign-in');
    await page.getByLabel('API key').fill(user.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(path);
    return page;
  }

  const read = async (user: TestUser = owner) =>
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- settings are checked field by field
    (await t.http().get(CONTROLS).set(user.auth).expect(200)).body as { revision: number; settings: Record<string, any> };
  const history = async () =>
    (await t.http().get(`${CONTROLS}/history`).set(owner.auth).expect(200)).body as { changes: { revision: number; user: { id: string } }[] };

  it('a form from the settings schema: descriptions shown, a change saved becomes a revision by its user', async () => {
    const page = await signedIn(owner, '/settings/controls');
    await page.getByRole('heading', { name: 'Enterprise controls' }).waitFor();
    await page.getByText('Revision 0: the defaults, never changed.').waitFor();
    // Every field of the schema, with its description (one from each level).
    await page.getByText('Members see only their own sessions.').waitFor();
    await page.getByText('Whether agents may use MCP servers at all.').waitFor();
    // A setting the server does not act on says so, with the reason.
    const noEffect = page.locator('.no-effect-field', { has: page.getByLabel('Wiki cloud sync') });
    await expect(noEffect.locator('.no-effect-badge').textContent()).resolves.toBe('No effect on this server');
    await expect(noEffect.textContent()).resolves.toContain('No effect on this server: this server has no wiki.');
    expect(await page.locator('.no-effect-field', { has: page.getByLabel('Restrict member visibility') }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Save controls' }).isDisabled()).toBe(true);
    problems.push(...(await checkPage(page, 'controls')));

    await page.getByLabel('Restrict member visibility').check();
    await page.getByLabel('Command blocklist').fill('rm -rf /\ncurl | sh\n');
    await page.getByLabel('Disable auto update').check();
    await page.getByText('3 unsaved changes.').waitFor();
    const saved = page.waitForResponse((response) => response.url().endsWith(CONTROLS) && response.request().method() === 'PATCH');
    await page.getByRole('button', { name: 'Save controls' }).click();
    const response = await saved;
    // Sent as a merge patch of what changed, conditional on the revision read.
    expect(response.request().headers()['if-match']).toBe('"0"');
    expect(JSON.parse(response.request().postData()!)).toEqual({
      settings: { restrictMemberVisibility: true, commandBlocklist: ['rm -rf /', 'curl | sh'], disableAutoUpdate: true },
    });
    await page.getByText('Saved: revision 1 is in force.').waitFor();
    // The one setting of the change that has no effect here is named, with the reason; the others act.
    await expect(page.locator('.save-warnings').textContent()).resolves.toMatch(/^disableAutoUpdate has no effect on this server: /);
    expect(await page.locator('.save-warnings li').count()).toBe(1);

    const now = await read();
    expect(now.revision).toBe(1);
    expect(now.settings.restrictMemberVisibility).toBe(true);
    expect(now.settings.commandBlocklist).toEqual(['rm -rf /', 'curl | sh']);
    expect((await history()).changes.map((change) => [change.revision, change.user.id])).toEqual([[1, owner.userId]]);
    await page.close();
  });

  it("a bad value: the server's error at its field, and no revision", async () => {
    const before = await read();
    const page = await signedIn(owner, '/settings/controls');
    await page.getByLabel('Session retention days').fill('0');
    await page.getByLabel('Allowed domains').fill('*.com');
    const answer = page.waitForResponse((response) => response.url().endsWith(CONTROLS) && response.request().method() === 'PATCH');
    await page.getByRole('button', { name: 'Save controls' }).click();
    const response = await answer;
    expect(response.status()).toBe(400);
    const errors = ((await response.json()) as { metadata: { errors: { field: string; message: string }[] } }).metadata.errors;
    const retention = errors.find((error) => error.field === 'settings.sessionRetentionDays')!;
    expect(retention).toBeDefined();
    expect(errors.some((error) => error.field.startsWith('settings.sandbox.network.allowedDomains'))).toBe(true);
    // At the field: described by its error, marked invalid; and listed in the summary, which links to it.
    const field = page.getByLabel('Session retention days');
    await expect(field.getAttribute('aria-invalid')).resolves.toBe('true');
    const describedBy = (await field.getAttribute('aria-describedby'))!;
    const errorText = await page.locator(`[id="${describedBy.split(' ').find((id) => id.endsWith('-errors'))}"]`).textContent();
    expect(errorText).toContain(retention.message);
    await expect(page.getByLabel('Allowed domains').getAttribute('aria-invalid')).resolves.toBe('true');
    await page.getByRole('link', { name: 'sessionRetentionDays' }).click();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('type'))).toBe('number');
    problems.push(...(await checkPage(page, 'controls-error')));
    expect((await read()).revision).toBe(before.revision);
    await page.close();
  });

  it('someone else saved first: the conflict screen, nothing overwritten, and their revision with mine re-applied', async () => {
    const page = await signedIn(owner, '/settings/controls');
    await page.getByText(/Revision 1, saved by/).waitFor();
    await page.getByLabel('Command allowlist').fill('git status');
    // A manager saves in between, through the API.
    await t
      .http()
      .patch(CONTROLS)
      .set(manager.auth)
      .send({ settings: { commandDenylist: ['git push*'], restrictMemberVisibility: false } })
      .expect(200);
    await page.getByRole('button', { name: 'Save controls' }).click();
    await page.getByRole('heading', { name: 'Someone else saved first' }).waitFor();
    const screen = await page.locator('.conflict').textContent();
    expect(screen).toContain('A manager');
    expect(screen).toContain('revision 2');
    expect(screen).toContain('commandAllowlist');
    expect(screen).toContain('commandDenylist');
    // Nothing of mine was written: revision 2 is theirs, whole.
    let now = await read();
    expect(now.revision).toBe(2);
    expect(now.settings.commandAllowlist).toEqual([]);
    expect(now.settings.commandDenylist).toEqual(['git push*']);
    problems.push(...(await checkPage(page, 'controls-conflict')));

    await page.getByRole('button', { name: 'Reload their revision and re-apply my changes' }).click();
    await page.getByText(/Revision 2, saved by A manager/).waitFor();
    await expect(page.getByLabel('Command allowlist').inputValue()).resolves.toBe('git status');
    await expect(page.getByLabel('Command denylist').inputValue()).resolves.toBe('git push*');
    await page.getByRole('button', { name: 'Save controls' }).click();
    await page.getByText('Saved: revision 3 is in force.').waitFor();
    now = await read();
    expect(now.settings.commandAllowlist).toEqual(['git status']);
    expect(now.settings.commandDenylist).toEqual(['git push*']);
    await page.close();
  });

  it("a custom model's key is never shown, only replaced", async () => {
    await t
      .http()
      .patch(CONTROLS)
      .set(owner.auth)
      .send({ settings: { customModels: [{ id: 'house', model: 'house-1', baseUrl: 'https://models.example.com/v1', apiKey: SECRET }] } })
      .expect(200);
    const page = await signedIn(owner, '/settings/controls');
    await page.getByText(`Stored: ****${SECRET.slice(-4)}`).waitFor();
    expect(await page.content()).not.toContain(SECRET);
    await page.getByRole('button', { name: 'Replace API key' }).click();
    const replacement = 'sk-replaced-key-0000abcd';
    await page.getByLabel('API key', { exact: true }).fill(replacement);
    expect(await page.getByLabel('API key', { exact: true }).getAttribute('type')).toBe('password');
    await page.getByText('JSON view (read-only)').click();
    await expect(page.locator('.json-view').textContent()).resolves.toContain('(new value, not shown)');
    expect(await page.locator('.json-view').textContent()).not.toContain(replacement);
    await page.getByRole('button', { name: 'Save controls' }).click();
    await page.getByText(/Saved: revision \d+ is in force./).waitFor();
    await page.getByText('Stored: ****abcd').waitFor();
    expect((await read()).settings.customModels[0].apiKey).toBe('****abcd');
    await page.close();
  });

  it("the history: each revision's author and time, and a side-by-side diff naming the changed field", async () => {
    const page = await signedIn(owner, '/settings/controls/history');
    await page.getByRole('heading', { name: 'Controls history' }).waitFor();
    await page.getByRole('heading', { name: 'Revision 2' }).waitFor();
    const revisions = await page.locator('.revision h2').allTextContents();
    expect(revisions.slice(-3)).toEqual(['Revision 3', 'Revision 2', 'Revision 1']);
    await page.getByRole('button', { name: 'Show changes of revision 2' }).click();
    const diff = page.locator('.revision-diff');
    await diff.getByText('commandDenylist').first().waitFor();
    await expect(diff.locator('.changed-fields').textContent()).resolves.toMatch(/Changed.*restrictMemberVisibility/);
    await diff.getByRole('columnheader', { name: 'Revision 1' }).waitFor();
    expect(await diff.locator('.diff-removed').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('"restrictMemberVisibility": true')]),
    );
    expect(await diff.locator('.diff-added').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('"restrictMemberVisibility": false'), expect.stringContaining('"git push*"')]),
    );
    // Revision 1 against the defaults the schema publishes.
    await page.getByRole('button', { name: 'Show changes of revision 1' }).click();
    await page.getByRole('columnheader', { name: 'The defaults (revision 0)' }).waitFor();
    expect(await page.locator('.revision-diff .diff-removed').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('"restrictMemberVisibility": false')]),
    );
    problems.push(...(await checkPage(page, 'controls-history')));
    await page.close();
  });

  it('a custom model on the Anthropic API and an HTTP MCP server with a secret header: added in the form, then shown masked and kept', async () => {
    const HEADER = 'Bearer mcp-header-secret-7f2e';
    const MASK = '****7f2e';
    /** The header as stored (encrypted at rest), decrypted: what the relay would send. */
    const storedHeader = async () => {
      const [row] = await t.app
        .get(DataSource)
        .query(`SELECT settings::text AS settings FROM enterprise_control_revisions WHERE organization_id = $1 ORDER BY revision DESC LIMIT 1`, [
          owner.organizationId,
        ]);
      const envelope = JSON.parse(row.settings).mcpServers[0].headers.Authorization as string;
      expect(envelope).toMatch(/^enc:v1:/);
      return t.app.get(SecretBox).decrypt(envelope, owner.organizationId);
    };
    const patched = (page: Page) => page.waitForResponse((response) => response.url().endsWith(CONTROLS) && response.request().method() === 'PATCH');
    const models = ((await read()).settings.customModels as unknown[]).length;
    const page = await signedIn(owner, '/settings/controls');
    await page.getByText(/Revision \d+, saved by/).waitFor();

    await page.getByRole('button', { name: 'Add to custom models' }).click();
    const model = page.getByRole('group', { name: `Custom models ${models + 1}`, exact: true });
    await model.getByLabel('Id', { exact: true }).fill('claude');
    await model.getByLabel('Model', { exact: true }).fill('claude-sonnet');
    await model.getByLabel('Base URL', { exact: true }).fill('https://anthropic.example.com');
    await model.getByLabel('Provider', { exact: true }).selectOption('anthropic');

    // A new server is a stdio one; choosing http keeps what both kinds have (the name) and shows the http fields.
    await page.getByRole('button', { name: 'Add to MCP servers' }).click();
    let server = page.getByRole('group', { name: 'MCP servers 1', exact: true });
    await expect(server.getByLabel('Transport', { exact: true }).inputValue()).resolves.toBe('stdio');
    await server.getByLabel('Command', { exact: true }).waitFor();
    await server.getByLabel('Name', { exact: true }).fill('docs');
    await server.getByLabel('Transport', { exact: true }).selectOption('http');
    await expect(server.getByLabel('Name', { exact: true }).inputValue()).resolves.toBe('docs');
    expect(await server.getByLabel('Command', { exact: true }).count()).toBe(0);
    await server.getByLabel('URL', { exact: true }).fill('https://mcp.example.com/mcp');
    await server.getByLabel('New key for headers').fill('Authorization');
    await server.getByRole('button', { name: 'Add to headers' }).click();
    await server.getByLabel('Authorization', { exact: true }).fill(HEADER);
    expect(await server.getByLabel('Authorization', { exact: true }).getAttribute('type')).toBe('password');
    await page.getByText('JSON view (read-only)').click();
    expect(await page.locator('.json-view').textContent()).not.toContain(HEADER);
    problems.push(...(await checkPage(page, 'controls-mcp-server')));
    let answer = patched(page);
    await page.getByRole('button', { name: 'Save controls' }).click();
    expect((await answer).status()).toBe(200);
    await page.getByText(/Saved: revision \d+ is in force./).waitFor();

    let now = await read();
    expect(now.settings.customModels[models]).toMatchObject({ id: 'claude', model: 'claude-sonnet', provider: 'anthropic' });
    expect(now.settings.mcpServers).toEqual([{ name: 'docs', transport: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: MASK } }]);
    expect(await storedHeader()).toBe(HEADER);
    const revision = now.revision;

    // Read again: the header only as its mask; another change to the server sends the mask back, and the header is kept.
    await page.reload();
    server = page.getByRole('group', { name: 'MCP servers 1', exact: true });
    await server.getByText(`Stored: ${MASK}`).waitFor();
    await expect(server.getByLabel('Transport', { exact: true }).inputValue()).resolves.toBe('http');
    await expect(
      page
        .getByRole('group', { name: `Custom models ${models + 1}`, exact: true })
        .getByLabel('Provider')
        .inputValue(),
    ).resolves.toBe('anthropic');
    expect(await page.content()).not.toContain(HEADER);
    // Absent is all of its tools (empty would be none): said as "not set", until set.
    await server.getByText('Allowed tools allowedTools: not set.').waitFor();
    await server.getByRole('button', { name: 'Set allowed tools' }).click();
    const tools = server.getByLabel('Allowed tools', { exact: true });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe(await tools.getAttribute('id'));
    await tools.fill('search\nfetch');
    answer = patched(page);
    await page.getByRole('button', { name: 'Save controls' }).click();
    const saved = await answer;
    expect(saved.status()).toBe(200);
    expect(JSON.parse(saved.request().postData()!)).toEqual({
      settings: {
        mcpServers: [
          { name: 'docs', transport: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: MASK }, allowedTools: ['search', 'fetch'] },
        ],
      },
    });
    await page.getByText(`Saved: revision ${revision + 1} is in force.`).waitFor();
    await server.getByText(`Stored: ${MASK}`).waitFor();
    now = await read();
    expect(now.settings.mcpServers[0]).toMatchObject({ headers: { Authorization: MASK }, allowedTools: ['search', 'fetch'] });
    expect(await storedHeader()).toBe(HEADER);

    // A stdio server's env values are secrets too: masked in the page, never in it.
    const ENV_SECRET = 'ghp-env-secret-value-9c1d';
    await t
      .http()
      .patch(CONTROLS)
      .set(owner.auth)
      .send({ settings: { mcpServers: [...now.settings.mcpServers, { name: 'tools', transport: 'stdio', command: 'mcp-tools', env: { TOKEN: ENV_SECRET } }] } })
      .expect(200);
    await page.reload();
    const stdio = page.getByRole('group', { name: 'MCP servers 2', exact: true });
    await expect(stdio.getByLabel('Transport', { exact: true }).inputValue()).resolves.toBe('stdio');
    await expect(stdio.getByLabel('Command', { exact: true }).inputValue()).resolves.toBe('mcp-tools');
    await stdio.getByText('Stored: ****9c1d').waitFor();
    await stdio.getByRole('button', { name: 'Replace TOKEN' }).waitFor();
    expect(await page.content()).not.toContain(ENV_SECRET);
    await page.close();
  });

  it('members and guests: no link, no page, no save button (the API refuses them the controls)', async () => {
    for (const role of [Role.Member, Role.Guest]) {
      const user = await createUser(t, role, { id: owner.organizationId, slug: owner.organizationSlug });
      await t.http().get(CONTROLS).set(user.auth).expect(403);
      const page = await signedIn(user, '/');
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Controls' }).count()).toBe(0);
      await page.goto('/settings/controls');
      await page.getByRole('heading', { name: 'Controls: not for your role' }).waitFor();
      expect(await page.getByRole('button', { name: 'Save controls' }).count()).toBe(0);
      if (role === Role.Member) problems.push(...(await checkPage(page, 'controls-member')));
      await page.close();
    }
  });

  it('every page passed axe-core (no serious or critical violation) and the Content-Security-Policy', () => {
    expect(problems).toEqual([]);
  });
});
