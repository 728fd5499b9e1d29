/// <reference lib="dom" />
// Code passed to page.evaluate() runs in the browser.
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { MessageRole, HistoryImportService } from '../../src/modules/sessions';
import { DurableListeners } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, openConsole } from './browser';

const DAY_MS = 86_400_000;
const NOW = Date.now();
const day = (daysAgo: number) => new Date(NOW - daysAgo * DAY_MS).toISOString().slice(0, 10);
const at = (daysAgo: number, hour: number) => new Date(Date.parse(`${day(daysAgo)}T00:00:00Z`) + hour * 3_600_000);
const TODAY = day(0);
const [D1, D2, D3, D6] = [day(1), day(2), day(3), day(6)];

/**
 * The analytics page in a real Chromium against the real server, on activity written through the fact pipeline (the
 * history importer, as the demo seeds it) and rolled up: the charts and their tables, ranges the API would refuse never
 * sent, CSV downloads equal to what is shown, the users table's paging, and members kept out as the API keeps them out.
 */
(browserAvailable() ? describe : describe.skip)('Analytics in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let owner: TestUser;
  const problems: string[] = [];

  const session = (user: TestUser, daysAgo: number, model: string, tools: string[], input: number) =>
    t.app.get(HistoryImportService).importSession({
      organizationId: user.organizationId,
      ownerId: user.userId,
      title: 'imported',
      settings: { autonomyLevel: 'high', interactionMode: 'auto' },
      createdAt: at(daysAgo, 9),
      messages: [
        { role: MessageRole.User, content: [{ type: 'text', text: 'Please fix it' }], createdAt: at(daysAgo, 9), userMessageSource: 'web' },
        {
          role: MessageRole.Assistant,
          content: [
            { type: 'text', text: 'On it.' },
            ...tools.map((name, i) => ({ type: 'tool_use' as const, id: `tu-${daysAgo}-${i}-${Math.random()}`, name, input: { file_path: `src/app${i}.ts` } })),
          ],
          attributes: { modelId: model },
          createdAt: at(daysAgo, 10),
        },
      ],
      usage: [{ model, at: at(daysAgo, 10), usage: { inputTokens: input, outputTokens: 100, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0 } }],
    });

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestApp({ ANALYTICS_ROLLUP_MS: '3600000' }), launchChromium()]);
    base = baseUrlOf(t);
    const organization = await createOrganization(t);
    owner = await createUser(t, Role.Owner, organization);
    await session(owner, 3, 'claude-opus', ['Edit', 'Write', 'Bash'], 5000);
    await session(owner, 2, 'gpt-5', ['Edit'], 2000);
    await session(owner, 2, 'claude-opus', ['Read'], 1000);
    // 22 more people active on D2: two pages of users.
    for (let i = 0; i < 22; i++) await session(await createUser(t, Role.Member, organization), 2, 'claude-opus', ['Read'], 100 + i);
    await t.app.get(DurableListeners).drain();
    await t.http().post('/api/v1/analytics/rollup').set(owner.auth).expect(200);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function signedIn(user: TestUser, path: string): Promise<{ page: Page; requests: string[] }> {
    const { page, cspViolations } = await openConsole(browser, base);
    page.on('close', () => problems.push(...cspViolations));
    const requests: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/api/v1/analytics/')) requests.push(request.url());
    });
    await page.goto('/sign-in');
    await page.getByLabel('API key').fill(user.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(path);
    return { page, requests };
  }

  const api = async (endpoint: string, query: string) => (await t.http().get(`/api/v1/analytics/${endpoint}?${query}`).set(owner.auth).expect(200)).body;

  it('charts of a range with their tables: tokens by model stacked, active users, tools, languages', async () => {
    const { page, requests } = await signedIn(owner, `/analytics?from=${D6}&to=${D1}`);
    await page.getByRole('heading', { name: 'Analytics' }).waitFor();
    const tokens = page.getByRole('region', { name: 'Tokens by model' });
    await tokens.locator('canvas').first().waitFor();
    for (const title of ['Active users', 'Tool usage', 'Productivity by language'])
      await page.getByRole('region', { name: title }).locator('canvas').first().waitFor();
    expect(requests.every((url) => url.includes(`startDate=${D6}`) && url.includes(`endDate=${D1}`))).toBe(true);

    // The tokens chart's table: one row per day, one column per model, the API's numbers.
    await tokens.getByRole('button', { name: /Show as a table/ }).click();
    const body = await api('tokens', `startDate=${D6}&endDate=${D1}`);
    const opusOnD2 = body.data
      .find((row: { date: string }) => row.date === D2)
      .by_model.find((m: { model_id: string }) => m.model_id === 'claude-opus').billable_tokens;
    const table = tokens.locator('table.data-table');
    const row = table.getByRole('row', { name: new RegExp(D2) });
    const headers = await table.getByRole('columnheader').allTextContents();
    const cells = await row.locator('th, td').allTextContents();
    expect(headers.slice(0, 3)).toEqual(['Date', 'claude-opus', 'gpt-5']);
    expect(Number(cells[headers.indexOf('claude-opus')])).toBe(opusOnD2);
    await expect(page.getByRole('region', { name: 'Tool usage' }).locator('.chart-summary').textContent()).resolves.toMatch(/most: Read/);
    await expect(page.getByRole('region', { name: 'Productivity by language' }).locator('.chart-summary').textContent()).resolves.toMatch(/most: TypeScript/);
    problems.push(...(await checkPage(page, 'analytics')));

    // Another range, from the quick choices: the address and the requests follow.
    // Waiting for the request itself: the old range's canvas is still on the page until the new answer comes.
    const lastWeek = page.waitForRequest((request) => request.url().includes('/api/v1/analytics/') && request.url().includes(`startDate=${day(7)}`));
    await page.getByRole('button', { name: 'Last 7 days' }).click();
    await page.waitForURL((url) => url.searchParams.get('from') === day(7) && url.searchParams.get('to') === D1);
    expect((await lastWeek).url()).toContain(`endDate=${D1}`);
    await page.close();
  });

  it('a range the API would refuse cannot be sent: the rule is shown instead', async () => {
    const { page, requests } = await signedIn(owner, `/analytics?from=${D3}&to=${D1}`);
    await page.getByRole('region', { name: 'Tokens by model' }).locator('canvas').first().waitFor();
    const sent = requests.length;
    const show = page.getByRole('button', { name: 'Show', exact: true });
    await page.getByLabel('To', { exact: true }).fill(TODAY);
    await page.getByText(`The end must be before today (${TODAY}, UTC)`).waitFor();
    expect(await show.isDisabled()).toBe(true);
    await page.getByLabel('To', { exact: true }).press('Enter');
    await page.getByLabel('To', { exact: true }).fill(D1);
    await page.getByLabel('From', { exact: true }).fill('2025-01-01');
    await page.getByText(/one request covers at most 400 days/).waitFor();
    expect(await show.isDisabled()).toBe(true);
    await page.getByLabel('From', { exact: true }).fill(D1);
    await page.getByLabel('To', { exact: true }).fill(D3);
    await page.getByText('The start must not be after the end.').waitFor();
    problems.push(...(await checkPage(page, 'analytics-refused')));
    expect(requests.length).toBe(sent);
    // Nor from the address.
    await page.goto(`/analytics?from=${D1}&to=${TODAY}`);
    await page.getByText(`The end must be before today (${TODAY}, UTC)`).waitFor();
    expect(requests.filter((url) => url.includes(`endDate=${TODAY}`))).toEqual([]);
    await page.close();
  });

  it("CSV downloads hold what is shown: a chart's table and the users table, page by page", async () => {
    const { page } = await signedIn(owner, `/analytics?from=${D6}&to=${D1}`);
    const tools = page.getByRole('region', { name: 'Tool usage' });
    await tools.getByRole('button', { name: /Show as a table/ }).click();
    const shown = await tools
      .locator('table.data-table')
      .getByRole('row')
      .evaluateAll((rows) => rows.map((row) => [...row.children].map((cell) => cell.textContent ?? '')));
    const [download] = await Promise.all([page.waitForEvent('download'), tools.getByRole('button', { name: /Download CSV/ }).click()]);
    expect(download.suggestedFilename()).toBe(`tool-usage_${D6}_${D1}.csv`);
    expect(parseCsv(readFileSync((await download.path())!, 'utf8'))).toEqual(shown);

    const users = page.getByRole('region', { name: 'Users, one row per user and day' });
    await users.getByRole('row').nth(1).waitFor();
    const usersSection = page.getByRole('region', { name: 'Users', exact: true });
    await usersSection.getByText('Page 1: 20 users').waitFor();
    const pageOne = await users.getByRole('row').evaluateAll((rows) => rows.map((row) => [...row.children].map((cell) => cell.textContent ?? '')));
    const [csv1] = await Promise.all([page.waitForEvent('download'), usersSection.getByRole('button', { name: /Download CSV/ }).click()]);
    expect(parseCsv(readFileSync((await csv1.path())!, 'utf8'))).toEqual(pageOne);
    expect(pageOne.length).toBe(1 + (await api('users', `startDate=${D6}&endDate=${D1}&limit=20`)).data.length);

    await usersSection.getByRole('button', { name: 'Next users' }).click();
    await usersSection.getByText('Page 2: 3 users').waitFor();
    expect(await usersSection.getByRole('button', { name: 'Next users' }).isDisabled()).toBe(true);
    const pageTwo = await users.getByRole('row').evaluateAll((rows) => rows.map((row) => [...row.children].map((cell) => cell.textContent ?? '')));
    const [csv2] = await Promise.all([page.waitForEvent('download'), usersSection.getByRole('button', { name: /Download CSV/ }).click()]);
    expect(csv2.suggestedFilename()).toBe(`users_${D6}_${D1}_page-2.csv`);
    expect(parseCsv(readFileSync((await csv2.path())!, 'utf8'))).toEqual(pageTwo);
    await usersSection.getByRole('button', { name: 'Previous users' }).click();
    await usersSection.getByText('Page 1: 20 users').waitFor();
    await page.close();
  });

  it('members and guests: no link and no page (the API refuses them analytics)', async () => {
    for (const role of [Role.Member, Role.Guest]) {
      const user = await createUser(t, role, { id: owner.organizationId, slug: owner.organizationSlug });
      await t.http().get(`/api/v1/analytics/tokens?startDate=${D3}&endDate=${D1}`).set(user.auth).expect(403);
      const { page, requests } = await signedIn(user, '/');
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Analytics' }).count()).toBe(0);
      await page.goto('/analytics');
      await page.getByRole('heading', { name: 'Analytics: not for your role' }).waitFor();
      expect(requests).toEqual([]);
      await page.close();
    }
  });

  it('every page passed axe-core (no serious or critical violation) and the Content-Security-Policy', () => {
    expect(problems).toEqual([]);
  });
});

/** RFC 4180, as the console writes it. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (quoted && c === '"') {
      quoted = false;
    } else if (quoted) {
      cell += c;
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else {
      cell += c;
    }
  }
  return rows;
}
