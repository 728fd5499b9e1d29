import { execFileSync } from 'node:child_process';
import type { Browser } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { CRITERIA, LEVEL_NAMES } from '../../src/modules/readiness/domain/criteria';
import { evaluateRepository } from '../../src/modules/readiness/evaluator/evaluate';
import { createGitRepo, reposRoot } from '../utils/git-fixtures';
import { createUser, type TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, signedInTab } from './browser';

/**
 * The Readiness page in Chromium against the real server: repositories with their latest level, a report made by the
 * real evaluator and uploaded through the API rendered by pillar with pass/fail and rationale, an older report picked
 * from the trend, the evaluate command; guests read without the upload command.
 */
(browserAvailable() ? describe : describe.skip)('Console: Readiness', () => {
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

  /** Every known criterion below `level` passes, none at or above it; plus a criterion this server does not know. */
  const reportAt = (level: number) => ({
    ...Object.fromEntries(
      CRITERIA.map((criterion) => [criterion.id, { numerator: criterion.level < level ? 1 : 0, denominator: 1, rationale: `hand-made ${criterion.id}` }]),
    ),
    security_review: { numerator: 1, denominator: 1, rationale: 'Reviewed by the security team in March' },
  });

  it('a member: empty state and the command, then a repository with its level, its trend and a report by pillar', async () => {
    const member = await createUser(t, Role.Member);
    const page = await signedInTab(browser, base, member.key, csp);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Readiness' }).click();
    await page.getByRole('heading', { name: 'Readiness', level: 1 }).waitFor();
    await page.getByText('No readiness reports yet.').waitFor();
    expect(await page.getByLabel('Evaluate and upload').textContent()).toContain(`--url ${base} --api-key`);
    expect(await page.getByLabel('Evaluate', { exact: true }).textContent()).toBe('npm run cli -- readiness evaluate ../your-repo');
    accessibility.push(...(await checkPage(page, 'readiness-empty')));

    // An older, hand-made report at level 3, then the real evaluator's report of a real repository: the same repository.
    const older = await t
      .http()
      .post('/api/organization/maturity-level-reports')
      .set(member.auth)
      .send({ repoUrl: 'https://github.com/acme/web', apps: { '.': { description: 'The web app' } }, report: reportAt(3) });
    expect(older.status).toBe(201);
    const dir = await createGitRepo(await reposRoot(), 'web', { 'README.md': '# Web\n', '.gitignore': 'node_modules\n', 'AGENTS.md': '# How to work here\n' });
    execFileSync('git', ['remote', 'add', 'origin', 'https://github.com/acme/web.git'], { cwd: dir });
    const evaluation = await evaluateRepository(dir);
    const latest = await t.http().post('/api/organization/maturity-level-reports').set(member.auth).send(evaluation.report);
    expect(latest.status).toBe(201);

    await page.reload();
    const row = page.getByRole('row', { name: /github\.com\/acme\/web/ });
    await row.waitFor();
    expect(await row.textContent()).toContain(`${evaluation.level} ${LEVEL_NAMES[evaluation.level - 1]}`);
    await row.getByRole('link').click();

    // The trend: two reports, level 3 then the evaluator's.
    const chart = page.getByRole('img', { name: 'Maturity level over time' });
    await chart.waitFor();
    expect(await chart.locator('circle').count()).toBe(2);
    expect(await page.locator('figcaption').textContent()).toContain(
      `level 3 (${LEVEL_NAMES[2]}) at first, level ${evaluation.level} (${LEVEL_NAMES[evaluation.level - 1]}) now`,
    );

    // The latest report, by pillar: each criterion passes or fails with the evaluator's own rationale.
    await page.getByRole('heading', { name: new RegExp(`^Report of .*: level ${evaluation.level}`) }).waitFor();
    for (const criterion of CRITERIA) {
      const item = page.locator(`li[data-criterion="${criterion.id}"]`);
      const evaluated = evaluation.report.report[criterion.id];
      const passed = evaluated.numerator >= evaluated.denominator;
      expect([criterion.id, await item.getAttribute('class')]).toEqual([criterion.id, passed ? 'pass' : 'fail']);
      expect(await item.locator('.rationale').textContent()).toBe(evaluated.rationale || 'No rationale given.');
    }
    const documentation = page.getByRole('region', { name: 'Documentation' });
    expect(await documentation.locator('li[data-criterion="readme"]').count()).toBe(1);
    expect(await documentation.locator('li[data-criterion="readme"] .status-pill').textContent()).toBe('Pass');
    expect(await page.getByRole('region', { name: 'Other criteria' }).count()).toBe(0);
    accessibility.push(...(await checkPage(page, 'readiness-report')));

    // The older report, picked by keyboard from the list under the trend: its level, and the criterion we do not know.
    await page.getByLabel('Report', { exact: true }).selectOption(older.body.reportId);
    await page.getByRole('heading', { name: /^Report of .*: level 3 · Standardized/ }).waitFor();
    expect(new URL(page.url()).searchParams.get('report')).toBe(older.body.reportId);
    const other = page.getByRole('region', { name: 'Other criteria' });
    expect(await other.textContent()).toContain('security_review');
    expect(await other.textContent()).toContain('Reviewed by the security team in March');
    expect(await page.locator('li[data-criterion="agents_md"]').getAttribute('class')).toBe('pass');
    expect(await page.locator('li[data-criterion="ci_pipeline"]').getAttribute('class')).toBe('fail');
    // A link to it works on its own (a reload shows the same report).
    await page.reload();
    await page.getByRole('heading', { name: /^Report of .*: level 3 · Standardized/ }).waitFor();
    accessibility.push(...(await checkPage(page, 'readiness-older-report')));
    await page.close();
  });

  it("a guest reads the reports but is offered no upload; another organization's repository is not shown", async () => {
    const owner = await createUser(t, Role.Owner);
    const guest = await createUser(t, Role.Guest, orgOf(owner));
    const stranger = await createUser(t, Role.Owner);
    await t
      .http()
      .post('/api/organization/maturity-level-reports')
      .set(owner.auth)
      .send({ repoUrl: 'https://github.com/acme/api', apps: {}, report: reportAt(2) })
      .expect(201);
    const theirs = await t
      .http()
      .post('/api/organization/maturity-level-reports')
      .set(stranger.auth)
      .send({ repoUrl: 'https://github.com/other/secret', apps: {}, report: reportAt(4) })
      .expect(201);
    expect(
      (
        await t
          .http()
          .post('/api/organization/maturity-level-reports')
          .set(guest.auth)
          .send({ repoUrl: 'https://github.com/acme/x', apps: {}, report: reportAt(1) })
      ).status,
    ).toBe(403);

    const page = await signedInTab(browser, base, guest.key, csp);
    await page.goto('/readiness');
    await page.getByRole('row', { name: /acme\/api/ }).waitFor();
    expect(await page.getByRole('row', { name: /other\/secret/ }).count()).toBe(0);
    expect(await page.getByLabel('Evaluate and upload').count()).toBe(0);
    await page.getByText('Guests may read reports but not upload them').waitFor();
    accessibility.push(...(await checkPage(page, 'readiness-guest')));
    // Another organization's repository by its id: not found, said so.
    const repoId = (await t.http().get('/api/organization/readiness-repositories').set(stranger.auth)).body.repositories[0].repoId as string;
    await page.goto(`/readiness?repo=${repoId}&report=${theirs.body.reportId}`);
    await page.getByText('No report of this repository in your organization').waitFor();
    expect(await page.content()).not.toContain('other/secret');
    await page.close();
  });

  it('every page passed axe-core and the Content-Security-Policy', () => {
    expect(accessibility).toEqual([]);
    expect(csp).toEqual([]);
  });
});
