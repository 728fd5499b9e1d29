import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { agentProcessFixture, completion, Json, ScriptedModel } from '../utils/fixtures/agent-process';
import { until } from '../utils/polling';
import { expectInvalid, expectV0Error } from '../utils/v0-errors';

const FIXTURE = resolve(__dirname, '..', 'fixtures', 'plugins', 'team-marketplace');
const CATALOG = '/api/v0/organization/enterprise-controls/plugins';
const REPORTS = '/api/v0/agent/plugin-catalogs';
const SHA = 'a'.repeat(40);

/**
 * The plugin catalog: the real agent process reports what it finds of the organization's marketplaces (the fixture
 * marketplace, as a git repository), and the console's reader route shows it beside `enabledPlugins`; the report route
 * keeps to the organization's own marketplaces, to agent tokens and to its limits.
 */
describe('The plugin catalog agents report', () => {
  const fixture = agentProcessFixture();
  const { computerWithAgent, say, setControls, untilIdle, messages, folders } = fixture;
  /** The organization of the first test, its owner, and its computer's agent token. */
  let owner: TestUser;
  let agentToken: { Authorization: string };
  let teamUrl: string;

  /** The fixture marketplace as a team would commit it, its `review` plugin with a version, an author and a category. */
  function marketplaceRepository(): { url: string; sha: string } {
    const dir = mkdtempSync(join(tmpdir(), 'ap-catalog-'));
    folders.push(dir);
    cpSync(FIXTURE, dir, { recursive: true });
    const manifestFile = join(dir, '.claude-plugin', 'marketplace.json');
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Json;
    Object.assign(manifest.plugins[0], { version: '1.4.0', author: { name: 'Platform team', email: 'platform@example.com' }, category: 'code review' });
    writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir, encoding: 'utf8' }).trim();
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-qm', 'Marketplace');
    return { url: pathToFileURL(dir).href, sha: git('rev-parse', 'HEAD') };
  }

  const readCatalog = async (user: TestUser): Promise<Json> => (await fixture.t.http().get(CATALOG).set(user.auth).expect(200)).body as Json;
  const marketplace = (catalog: Json, name: string): Json => (catalog.marketplaces as Json[]).find((entry) => entry.name === name)!;
  const report = (auth: { Authorization: string }, body: unknown) =>
    fixture.t
      .http()
      .post(REPORTS)
      .set(auth)
      .send(body as object);

  it('after a turn, lists the plugins the agent found, each enabled as enabledPlugins has it, and why a marketplace could not be read', async () => {
    const model = new ScriptedModel(() => completion({ content: 'Done.' }));
    const modelUrl = await model.start();
    try {
      const { url, sha } = marketplaceRepository();
      teamUrl = url;
      const made = await computerWithAgent({ AGENT_MODEL_BASE_URL: modelUrl, AGENT_MODEL: 'scripted-1' });
      owner = made.owner;
      agentToken = { Authorization: `Bearer ${made.token}` };
      const missing = pathToFileURL(join(tmpdir(), 'ap-no-such-marketplace')).href;
      await setControls({
        extraKnownMarketplaces: { team: { source: 'git', repo: url }, gone: { source: 'git', repo: missing } },
        enabledPlugins: { 'review@team': true, 'escape@team': false, 'ghost@team': true },
      });
      // Before any agent ran a turn: the marketplaces, and no catalog.
      const before = await readCatalog(owner);
      expect(before.marketplaces).toEqual([
        { name: 'team', source: 'git', repo: url, allowed: true, catalog: null },
        { name: 'gone', source: 'git', repo: missing, allowed: true, catalog: null },
      ]);

      const sessionId = await say(made.computerId, 'Hello.');
      await untilIdle(sessionId, made.output);
      // A marketplace out of reach fails no turn.
      expect((await messages(sessionId)).at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'Done.' }] });

      const catalog = await until(
        () => readCatalog(owner),
        (value) => (value.marketplaces as Json[]).every((entry) => entry.catalog !== null),
        'both marketplaces reported',
      );
      const team = marketplace(catalog, 'team').catalog as Json;
      expect(team).toEqual({
        outcome: 'read',
        commit: sha,
        error: null,
        plugins: [
          {
            name: 'review',
            description: 'Code review commands, a changelog skill and a prompt log.',
            version: '1.4.0',
            author: 'Platform team',
            category: 'code review',
            enabled: true,
          },
          { name: 'escape', description: 'A plugin whose folder lies outside the marketplace.', enabled: false },
        ],
        reportedAt: expect.any(String),
        computerId: made.computerId,
      });
      expect(marketplace(catalog, 'gone').catalog).toMatchObject({
        outcome: 'failed',
        commit: null,
        plugins: [],
        error: expect.stringMatching(/^git fetch failed: /),
      });
      expect(catalog.unlistedEnabledPlugins).toEqual(['ghost@team']);

      // Another marketplace (the same repository under another name): only it is reported again, as nothing else changed.
      await setControls({
        extraKnownMarketplaces: { team: { source: 'git', repo: url }, gone: { source: 'git', repo: missing }, again: { source: 'git', repo: url } },
      });
      const second = await say(made.computerId, 'Hello again.');
      await untilIdle(second, made.output);
      const after = await until(
        () => readCatalog(owner),
        (value) => marketplace(value, 'again').catalog !== null,
        'the new marketplace reported',
      );
      expect((marketplace(after, 'again').catalog as Json).commit).toBe(sha);
      expect((marketplace(after, 'team').catalog as Json).reportedAt).toBe(team.reportedAt);
      // Still failing, unchanged: not reported again either.
      expect((marketplace(after, 'gone').catalog as Json).reportedAt).toBe((marketplace(catalog, 'gone').catalog as Json).reportedAt);
    } finally {
      await model.stop();
    }
  });

  it("refuses a report of a marketplace the organization's settings do not name, and keeps nothing of it", async () => {
    const res = await report(agentToken, { marketplace: 'elsewhere', outcome: 'read', commit: SHA, plugins: [{ name: 'sneaky' }] });
    expectInvalid(res, 'marketplace');
    expect(res.body.detail).toContain("is not among your organization's extraKnownMarketplaces");
    // Named afterwards, it has no catalog: the refused report was not kept.
    await setControls({ extraKnownMarketplaces: { team: { source: 'git', repo: teamUrl }, elsewhere: { source: 'github', repo: 'acme/elsewhere' } } });
    expect(marketplace(await readCatalog(owner), 'elsewhere').catalog).toBeNull();
  });

  it('replaces the catalog of the marketplace with the latest report, and shows none of an address changed since', async () => {
    await report(agentToken, { marketplace: 'elsewhere', outcome: 'failed', error: 'git fetch failed: could not resolve host github.com' }).expect(204);
    expect(marketplace(await readCatalog(owner), 'elsewhere').catalog).toMatchObject({
      outcome: 'failed',
      error: 'git fetch failed: could not resolve host github.com',
    });
    await report(agentToken, { marketplace: 'elsewhere', outcome: 'read', commit: SHA, plugins: [{ name: 'lint', version: '2.0.0' }] }).expect(204);
    expect(marketplace(await readCatalog(owner), 'elsewhere').catalog).toMatchObject({
      outcome: 'read',
      error: null,
      plugins: [{ name: 'lint', version: '2.0.0', enabled: false }],
    });
    // Pointed at another repository: what was found at the old one is not shown as this one's.
    await setControls({ extraKnownMarketplaces: { team: { source: 'git', repo: teamUrl }, elsewhere: { source: 'github', repo: 'acme/other' } } });
    expect(marketplace(await readCatalog(owner), 'elsewhere').catalog).toBeNull();
  });

  it("another organization never sees an organization's catalog, nor can its agents write to it", async () => {
    const stranger = await createUser(fixture.t, Role.Owner);
    expect(await readCatalog(stranger)).toEqual({ marketplaces: [], unlistedEnabledPlugins: [] });
    // The same marketplace name in its own settings: still no catalog of the other organization's.
    await fixture.t
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(stranger.auth)
      .send({ settings: { extraKnownMarketplaces: { team: { source: 'git', repo: teamUrl } } } })
      .expect(200);
    expect(marketplace(await readCatalog(stranger), 'team').catalog).toBeNull();
    // Its agents report for their own organization only: this one's catalog is unchanged.
    const before = marketplace(await readCatalog(owner), 'team').catalog as Json;
    const computer = await fixture.t
      .http()
      .post('/api/v0/computers')
      .set(stranger.auth)
      .send({ name: 'theirs', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' })
      .expect(201);
    await report({ Authorization: `Bearer ${computer.body.agentToken}` }, { marketplace: 'team', outcome: 'read', commit: SHA, plugins: [] }).expect(204);
    expect(marketplace(await readCatalog(owner), 'team').catalog).toEqual(before);
    expect(marketplace(await readCatalog(stranger), 'team').catalog).toMatchObject({ commit: SHA, plugins: [], computerId: computer.body.id });
  });

  it('only owners and managers read the catalog, and only agent tokens report', async () => {
    const organization = { id: owner.organizationId, slug: owner.organizationSlug };
    const manager = await createUser(fixture.t, Role.Manager, organization);
    expect(marketplace(await readCatalog(manager), 'team').catalog).not.toBeNull();
    for (const role of [Role.Member, Role.Guest]) {
      const user = await createUser(fixture.t, role, organization);
      expectV0Error(await fixture.t.http().get(CATALOG).set(user.auth), 403, 'insufficient_role');
    }
    expectV0Error(await fixture.t.http().get(CATALOG).set(agentToken), 403, 'computer_token_not_accepted');
    expectV0Error(await report(owner.auth, { marketplace: 'team', outcome: 'read', commit: SHA, plugins: [] }), 403, 'agent_token_required');
    expectV0Error(await fixture.t.http().get(CATALOG), 401, 'missing_credentials');
  });

  it('holds a report to its limits: the body size, the number of plugins, the length of each field', async () => {
    const plugin = (fields: Json = {}) => ({ name: 'lint', ...fields });
    const read = (plugins: unknown[]) => ({ marketplace: 'team', outcome: 'read', commit: SHA, plugins });
    const huge = await report(agentToken, read(Array.from({ length: 400 }, (_, i) => plugin({ name: `p${i}`, description: 'x'.repeat(3000) }))));
    expectV0Error(huge, 413, 'payload_too_large');
    expectInvalid(await report(agentToken, read(Array.from({ length: 501 }, (_, i) => plugin({ name: `p${i}` })))), 'plugins');
    expectInvalid(await report(agentToken, read([plugin({ description: 'x'.repeat(1001) })])), 'plugins[0].description');
    expectInvalid(await report(agentToken, read([plugin({ name: 'n'.repeat(129) })])), 'plugins[0].name');
    expectInvalid(await report(agentToken, read([plugin({ version: 'one\ntwo' })])), 'plugins[0].version');
    expectInvalid(await report(agentToken, read([plugin({ homepage: 'https://example.com' })])), 'plugins[0].homepage');
    expectInvalid(await report(agentToken, { marketplace: 'team', outcome: 'failed', error: 'e'.repeat(2001) }), 'error');
    expectInvalid(await report(agentToken, { marketplace: 'team', outcome: 'read', commit: 'HEAD', plugins: [] }), 'commit');
    // The catalog the agent reported is still the one shown.
    expect((marketplace(await readCatalog(owner), 'team').catalog as Json).plugins).toHaveLength(2);
  });
});
