/// <reference lib="dom" />
import type { Browser } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, signedInTab } from './browser';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain Node, as the MCP fixture it serves
const { startOAuthMcpServer } = require('../fixtures/mcp-oauth-server.js') as {
  startOAuthMcpServer: () => Promise<{ url: string; port: number; options: { denying: boolean }; close: () => Promise<void> }>;
};

/**
 * An admin signs in to an MCP server that asks for OAuth, from the controls page, in a real Chromium: the browser
 * leaves for the server's authorization server (a local one built with the MCP SDK's router) and comes back to the page.
 */
(browserAvailable() ? describe : describe.skip)('MCP server sign-in in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let owner: TestUser;
  let mcp: Awaited<ReturnType<typeof startOAuthMcpServer>>;
  const csp: string[] = [];

  beforeAll(async () => {
    mcp = await startOAuthMcpServer();
    [t, browser] = await Promise.all([startTestApp({ MCP_RELAY_ALLOWED_HOSTS: `127.0.0.1:${mcp.port}`, CONTROLS_CACHE_MS: '0' }), launchChromium()]);
    base = baseUrlOf(t);
    // The app listens on a port of its own choosing: its public address (where sign-ins come back) is known only now.
    Object.assign(t.config, { BASE_URL: base });
    owner = await createUser(t, Role.Owner);
    await t
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(owner.auth)
      .send({ settings: { mcpServers: [{ name: 'remote', transport: 'http', url: mcp.url }] } })
      .expect(200);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await mcp?.close();
  });

  it('signs in from the controls page and comes back to it signed in; a refused sign-in says why', async () => {
    const page = await signedInTab(browser, base, owner.key, csp);
    await page.goto('/settings/controls');
    const section = page.getByRole('region', { name: 'MCP server sign-ins' });
    await section.getByText('Not signed in').waitFor();
    await section.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/settings/controls' && url.searchParams.get('mcpOAuth') === 'connected');
    await section.getByText('Signed in to remote.').waitFor();
    await section.locator('.badge', { hasText: 'Signed in' }).waitFor();
    const status = await t.http().get('/api/v0/organization/enterprise-controls/mcp-servers/remote/oauth').set(owner.auth).expect(200);
    expect(status.body).toMatchObject({ status: 'connected', connectedBy: owner.userId });
    const problems = await checkPage(page, 'controls-mcp-sign-in');

    mcp.options.denying = true;
    await section.getByRole('button', { name: 'Sign in again' }).click();
    await page.waitForURL((url) => url.searchParams.get('mcpOAuth') === 'failed');
    await section
      .getByText(/The sign-in to remote failed: the authorization server answered access_denied/)
      .first()
      .waitFor();
    // The connection made before still holds.
    await section.locator('.badge', { hasText: 'Signed in' }).waitFor();

    // Forgotten: the tokens are gone, and the page says so without an error (the answer is a 204).
    await section.getByRole('button', { name: 'Forget the sign-in' }).click();
    await section.locator('.badge', { hasText: 'Not signed in' }).waitFor();
    expect(await section.getByRole('alert').count()).toBe(0);
    const forgotten = await t.http().get('/api/v0/organization/enterprise-controls/mcp-servers/remote/oauth').set(owner.auth).expect(200);
    expect(forgotten.body.status).toBe('not_connected');
    await page.close();
    expect([...problems, ...csp]).toEqual([]);
  });
});
