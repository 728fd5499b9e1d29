import type { Browser } from 'playwright-core';
import { Role } from '../../src/modules/auth';
import { createUser, type TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { registerWorker } from '../utils/workers';
import { baseUrlOf, browserAvailable, checkPage, launchChromium, signedInTab } from './browser';

/**
 * The Worker pools pages in Chromium against the real server: a pool made in the page, its enrollment token shown once
 * (and working: a worker registers with it, and appears on the open page), evict and revoke after a confirmation; a
 * computer made for the pool shows where it runs, waiting then on the worker; the pool it holds cannot be deleted;
 * members get neither the link nor the page.
 */
(browserAvailable() ? describe : describe.skip)('Console: Worker pools', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;
  const accessibility: string[] = [];
  const csp: string[] = [];

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestApp({ LOCAL_AGENTS: 'off' }), launchChromium()]);
    base = baseUrlOf(t);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const orgOf = (user: TestUser) => ({ id: user.organizationId, slug: user.organizationSlug });
  const workersOf = async (user: TestUser, poolId: string) =>
    (await t.http().get(`/api/v0/worker-pools/${poolId}/workers`).set(user.auth).expect(200)).body.workers as { id: string; name: string; status: string }[];

  it('an owner makes a pool and a token (shown once, and working), sees a worker join live, evicts it and revokes the token', async () => {
    const owner = await createUser(t, Role.Owner);
    const page = await signedInTab(browser, base, owner.key, csp);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Worker pools' }).click();
    await page.getByRole('heading', { name: 'Worker pools', level: 1 }).waitFor();
    await page.getByText('No worker pools yet.').waitFor();
    accessibility.push(...(await checkPage(page, 'worker-pools-empty')));

    // The API's refusal in its words: a name that is not one.
    const refused = page.waitForResponse((response) => response.url().endsWith('/api/v0/worker-pools') && response.request().method() === 'POST');
    await page.getByLabel('Name').fill('GPU Lab');
    await page.getByRole('button', { name: 'Create pool' }).click();
    const refusal = await refused;
    expect(refusal.status()).toBe(400);
    expect(await page.getByRole('alert').textContent()).toContain(refusal.headers()['x-request-id']);

    await page.getByLabel('Name').fill('gpu-lab');
    await page.getByLabel('Description (optional)').fill('The lab machines');
    await page.getByLabel('Computers per worker (optional)').fill('2');
    await page.getByRole('button', { name: 'Create pool' }).click();
    await page.getByRole('heading', { name: 'Pool gpu-lab', level: 1 }).waitFor();
    const poolId = new URL(page.url()).pathname.split('/').pop()!;
    const pool = (await t.http().get(`/api/v0/worker-pools/${poolId}`).set(owner.auth).expect(200)).body;
    expect(pool).toMatchObject({ name: 'gpu-lab', description: 'The lab machines', maxComputersPerWorker: 2, allowUnsandboxed: false });
    await page.getByText('No workers yet.').waitFor();
    await page.getByText('Live: changes appear as they happen.').waitFor();

    // A token: shown once, with the worker's command, which reads it from a file and never holds it.
    await page.getByLabel('Token name').fill('rack 1');
    await page.getByRole('button', { name: 'Make token' }).click();
    const token = await page.getByLabel('The enrollment token').inputValue();
    expect(token).toMatch(/^wkt_/);
    const command = (await page.getByLabel("The worker's command").textContent())!;
    expect(command).toContain(`agent-platform worker --url ${base} --token-file /etc/agent-platform/worker-token`);
    expect(command).not.toContain(token);
    accessibility.push(...(await checkPage(page, 'worker-pool-token-once')));

    // The token works: a worker registers with it, and the open page shows it (the event stream, no reload).
    const worker = await registerWorker(t, token, { name: 'gpu-01', labels: ['gpu', 'arch=x64'] });
    const row = page.getByRole('row', { name: /gpu-01/ });
    await row.getByText('Online').waitFor();
    expect(await row.textContent()).toContain('arch=x64');
    // The pool's cap lowers what the worker reports (4).
    expect(await row.textContent()).toContain('2 computers');

    // Shown once: not after "Done", not after a reload; the list shows its prefix only.
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    expect(await page.getByLabel('The enrollment token').count()).toBe(0);
    await page.reload();
    await page.getByRole('heading', { name: 'Pool gpu-lab', level: 1 }).waitFor();
    const tokenRow = page.getByRole('row', { name: /rack 1/ });
    await tokenRow.getByText('Active').waitFor();
    expect(await tokenRow.textContent()).toContain(token.slice(0, 12));
    expect(await page.content()).not.toContain(token);
    await row.getByText('Online').waitFor();
    accessibility.push(...(await checkPage(page, 'worker-pool')));

    // Evict: Escape cancels, confirming evicts.
    await row.getByRole('button', { name: 'Evict gpu-01' }).click();
    const evictDialog = page.getByRole('dialog', { name: 'Evict “gpu-01”?' });
    await evictDialog.waitFor();
    accessibility.push(...(await checkPage(page, 'worker-pool-evict-dialog')));
    await page.keyboard.press('Escape');
    await evictDialog.waitFor({ state: 'hidden' });
    expect((await workersOf(owner, poolId)).find((w) => w.id === worker.id)?.status).toBe('online');
    await row.getByRole('button', { name: 'Evict gpu-01' }).click();
    await evictDialog.getByRole('button', { name: 'Evict worker' }).click();
    await evictDialog.waitFor({ state: 'hidden' });
    await row.getByText('Evicted').waitFor();
    expect((await workersOf(owner, poolId)).find((w) => w.id === worker.id)?.status).toBe('evicted');
    expect(await row.getByRole('button', { name: 'Evict gpu-01' }).count()).toBe(0);

    // Revoke the token: it registers no more workers.
    await tokenRow.getByRole('button', { name: 'Revoke rack 1' }).click();
    const revokeDialog = page.getByRole('dialog', { name: 'Revoke “rack 1”?' });
    await revokeDialog.getByRole('button', { name: 'Revoke token' }).click();
    await revokeDialog.waitFor({ state: 'hidden' });
    await tokenRow.getByText('Revoked').waitFor();
    const again = await t
      .http()
      .post('/api/v0/worker/register')
      .set({ Authorization: `Bearer ${token}` })
      .send({
        name: 'gpu-02',
        hostname: 'gpu-02',
        labels: [],
        capacity: { computers: 1, cpus: 1, memoryMb: 1024, diskMb: 1024 },
        sandboxed: true,
        version: '0.1.0',
      });
    expect(again.status).toBe(401);

    // Settings: saved, and the pools list shows them.
    await page.getByLabel('Description (optional)').fill('Lab machines, rack 1');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Saved.').waitFor();
    expect((await t.http().get(`/api/v0/worker-pools/${poolId}`).set(owner.auth).expect(200)).body.description).toBe('Lab machines, rack 1');
    await page.getByRole('link', { name: 'Worker pools' }).first().click();
    const poolRow = page.getByRole('row', { name: /gpu-lab/ });
    await poolRow.waitFor();
    expect(await poolRow.textContent()).toContain('Lab machines, rack 1');
    accessibility.push(...(await checkPage(page, 'worker-pools')));
    await page.close();
  });

  it('a computer made for a pool: labels checked before sending, Runs on waits then names the worker, live; its pool cannot be deleted', async () => {
    const owner = await createUser(t, Role.Owner);
    const pool = (await t.http().post('/api/v0/worker-pools').set(owner.auth).send({ name: 'arm-farm' }).expect(201)).body as { id: string };
    const token = (await t.http().post(`/api/v0/worker-pools/${pool.id}/enrollment-tokens`).set(owner.auth).send({ name: 'all' }).expect(201)).body
      .token as string;
    const page = await signedInTab(browser, base, owner.key, csp);
    await page.goto('/computers');
    await page.getByRole('heading', { name: 'Computers', level: 1 }).waitFor();
    await page.getByLabel('Managed workspace (local)').check();
    await page.getByLabel('Name').fill('Arm box');
    await page.getByLabel('A worker pool').check();
    await page.getByLabel('Pool', { exact: true }).selectOption('arm-farm');

    // A label the API would refuse is said at the field, and nothing is sent.
    const posts: string[] = [];
    page.on('request', (request) => request.method() === 'POST' && request.url().endsWith('/api/v0/computers') && posts.push(request.url()));
    await page.getByLabel('Labels (comma separated, optional)').fill('arch=arm64, GPU!');
    await page.getByRole('button', { name: 'Create computer' }).click();
    await page.getByText('Not a label: “GPU!”').waitFor();
    expect(await page.getByLabel('Labels (comma separated, optional)').getAttribute('aria-invalid')).toBe('true');
    accessibility.push(...(await checkPage(page, 'computers-labels-refused')));
    expect(posts).toEqual([]);

    await page.getByLabel('Labels (comma separated, optional)').fill('arch=arm64');
    await page.getByRole('button', { name: 'Create computer' }).click();
    await page.getByRole('heading', { name: 'Arm box', level: 1 }).waitFor();
    const computerId = new URL(page.url()).pathname.split('/').pop()!;
    expect((await t.http().get(`/api/v0/computers/${computerId}`).set(owner.auth).expect(200)).body.placement).toEqual({
      poolId: pool.id,
      poolName: 'arm-farm',
      labels: ['arch=arm64'],
    });
    await page.getByRole('button', { name: 'Done, I have stored it' }).click();
    const runsOn = page.locator('[data-fact="runs-on"]');
    expect(await runsOn.textContent()).toMatch(/^Waiting for a worker since /);
    expect(await page.locator('[data-fact="placement"]').textContent()).toBe('Pool arm-farm, labels arch=arm64');
    await page.getByText('Live: changes appear as they happen.').waitFor();

    // A worker without the label does not take it; one with it does, and the open page says so.
    await registerWorker(t, token, { name: 'x86-01', labels: ['arch=x64'] });
    await registerWorker(t, token, { name: 'arm-01', labels: ['arch=arm64'] });
    await page.locator('[data-fact="runs-on"]', { hasText: 'Worker arm-01 (pool arm-farm)' }).waitFor();
    accessibility.push(...(await checkPage(page, 'computer-on-worker')));

    await page.goto('/computers');
    await page
      .getByRole('row', { name: /Arm box/ })
      .getByText('Worker arm-01 (pool arm-farm)')
      .waitFor();

    // The pool holds a computer: deleting it is refused, and the page says why.
    await page.goto(`/worker-pools/${pool.id}`);
    await page.getByRole('heading', { name: 'Pool arm-farm', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Delete pool' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete pool “arm-farm”?' });
    const deleted = page.waitForResponse((response) => response.url().endsWith(`/api/v0/worker-pools/${pool.id}`) && response.request().method() === 'DELETE');
    await dialog.getByRole('button', { name: 'Delete pool' }).click();
    const refusal = await deleted;
    expect(refusal.status()).toBe(409);
    expect(((await refusal.json()) as { metadata: { code: string } }).metadata.code).toBe('worker_pool_in_use');
    await dialog.getByText('Computers were created for this pool.').waitFor();
    expect(await dialog.getByRole('alert').textContent()).toContain(((await refusal.json()) as { detail: string }).detail);
    accessibility.push(...(await checkPage(page, 'worker-pool-in-use')));
    await page.keyboard.press('Escape');

    // Without the computer, the pool goes.
    await t.http().delete(`/api/v0/computers/${computerId}`).set(owner.auth).expect(204);
    await page.getByRole('button', { name: 'Delete pool' }).click();
    await dialog.getByRole('button', { name: 'Delete pool' }).click();
    await page.getByRole('heading', { name: 'Worker pools', level: 1 }).waitFor();
    expect((await t.http().get(`/api/v0/worker-pools/${pool.id}`).set(owner.auth)).status).toBe(404);
    await page.close();
  });

  it('a member gets neither the link nor the page, and names a pool by hand when making a computer', async () => {
    const owner = await createUser(t, Role.Owner);
    const member = await createUser(t, Role.Member, orgOf(owner));
    expect((await t.http().get('/api/v0/worker-pools').set(member.auth)).status).toBe(403);
    const page = await signedInTab(browser, base, member.key, csp);
    expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Worker pools' }).count()).toBe(0);
    await page.goto('/worker-pools');
    await page.getByRole('heading', { name: 'Worker pools: not for your role' }).waitFor();
    await page.goto('/worker-pools/00000000-0000-4000-8000-000000000000');
    await page.getByRole('heading', { name: 'Worker pool: not for your role' }).waitFor();

    // The pools list is refused to members: the form asks for the pool's name (and never asks the API for the list).
    const poolReads: string[] = [];
    page.on('request', (request) => request.url().includes('/api/v0/worker-pools') && poolReads.push(request.url()));
    await page.goto('/computers');
    await page.getByLabel('Managed workspace (local)').check();
    await page.getByLabel('A worker pool').check();
    expect(await page.getByLabel('Pool', { exact: true }).evaluate((element) => element.tagName)).toBe('INPUT');
    accessibility.push(...(await checkPage(page, 'computers-member-pool')));
    expect(poolReads).toEqual([]);
    await page.close();
  });

  it('every page passed axe-core and the Content-Security-Policy', () => {
    expect(accessibility).toEqual([]);
    expect(csp).toEqual([]);
  });
});
