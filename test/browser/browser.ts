/// <reference lib="dom" />
// Code passed to page.evaluate() runs in the browser.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { TestApp } from '../utils/test-app';

/** Debian's Chromium (`apt-get install chromium`, as .ci/run does); never a browser downloaded by Playwright. */
export const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts', 'console');

/**
 * Browser tests run where Chromium is installed. In CI (CI=true) a missing Chromium fails the suite; elsewhere the
 * suite is skipped with a loud message.
 */
export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true;
  const message = `\n!!! ${CHROMIUM} is missing: the web console's browser tests cannot run (apt-get install -y chromium). !!!\n`;
  if (process.env.CI) throw new Error(message);
  console.warn(`${message}!!! Skipping them outside CI. !!!\n`);
  return false;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS, timeout: 20_000 });
}

export function baseUrlOf(t: TestApp): string {
  const { port } = t.app.getHttpServer().address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

/** A fresh browser profile (its own sessionStorage); every Content-Security-Policy violation is recorded. */
export async function openConsole(browser: Browser, baseURL: string): Promise<{ context: BrowserContext; page: Page; cspViolations: string[] }> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseURL });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const cspViolations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) cspViolations.push(message.text());
  });
  return { context, page, cspViolations };
}

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * axe-core's serious and critical violations on the page as it is now. Run through the DevTools protocol (not a
 * <script>, which the console's Content-Security-Policy rightly refuses).
 */
export async function seriousAxeViolations(page: Page): Promise<{ id: string; impact: string | null; help: string; targets: string[] }[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations;
  });
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, targets: violation.nodes.flatMap((node) => node.target) }));
}

/**
 * Every page in light and dark, at 375 and 1280 px: a screenshot of each (test-artifacts/console/) and axe-core's
 * serious or critical violations of each (expected none). Leaves the page light, at 1280 px.
 */
export async function checkPage(page: Page, name: string): Promise<string[]> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const problems: string[] = [];
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    for (const width of [375, 1280]) {
      await page.setViewportSize({ width, height: width === 375 ? 740 : 800 });
      await page.screenshot({ path: join(ARTIFACTS, `${name}-${colorScheme}-${width}.png`), fullPage: true });
      for (const violation of await seriousAxeViolations(page)) {
        problems.push(`${name} ${colorScheme} ${width}px: ${violation.impact} ${violation.id} (${violation.help}) at ${violation.targets.join(', ')}`);
      }
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });
  return problems;
}

/**
 * A signed-in tab for page tests (members, computers, readiness...): a fresh profile, signed in through the sign-in
 * page with `key`; its Content-Security-Policy violations are collected in `csp`.
 */
export async function signedInTab(browser: Browser, baseURL: string, key: string, csp: string[]): Promise<Page> {
  const { page, cspViolations } = await openConsole(browser, baseURL);
  page.on('close', () => csp.push(...cspViolations));
  await page.goto('/sign-in');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return page;
}
