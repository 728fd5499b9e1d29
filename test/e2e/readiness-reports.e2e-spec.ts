import { randomUUID } from 'node:crypto';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { ValidateFunction } from 'ajv';
import { Role } from '../../src/modules/auth';
import { CRITERIA } from '../../src/modules/readiness/domain/criteria';
import { MAX_PAGE, DEFAULT_PAGE, REPORT_LIMITS } from '../../src/modules/readiness/domain/report';
import { repositoryId } from '../../src/modules/readiness/domain/repository-id';
import { EventLog, type StoredEvent } from '../../src/platform/events';
import { createUser } from '../utils/factories';
import { until } from '../utils/polling';
import { expectStatus } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { ALIAS, body, Evaluation, fail, Json, LEVEL, OPTIONAL, pass, readinessFixture, reportAt, UUID } from '../utils/fixtures/readiness';

/** Readiness reports over real HTTP: upload and list, paging, the repository's identity, levels, and the events an upload raises. */

const REPO_ID = /^repo_[0-9a-f]{20}$/;

const SPEC_FIELDS = [
  'reportId',
  'createdAt',
  'repoUrl',
  'apps',
  'report',
  'commitHash',
  'branch',
  'hasLocalChanges',
  'hasNonRemoteCommits',
  'modelUsed',
  'agentVersion',
];

// --- report bodies ----------------------------------------------------------------------------

const idsOf = (level: number) => CRITERIA.filter((criterion) => criterion.level === level).map((criterion) => criterion.id);

describe('Readiness reports', () => {
  const fixture = readinessFixture();
  const { http, expectValid, newOwner, post, upload, list, repositories, level, newestFirst, ids, expectInvalid } = fixture;
  let t: TestApp;
  let validateServedReport: ValidateFunction;
  let validateServedLevel: ValidateFunction;
  beforeAll(() => ({ t, validateServedReport, validateServedLevel } = fixture));

  // --- 1. upload then list -------------------------------------------------------------------

  describe('upload and list', () => {
    it('stores the report as sent, with a server-assigned reportId and createdAt, and lists it at both paths', async () => {
      const owner = await newOwner();
      const before = Date.now();
      const minimal = await upload(owner, body());
      const after = Date.now();
      expect(Object.keys(minimal).sort()).toEqual(['apps', 'createdAt', 'report', 'repoUrl', 'reportId'].sort());
      expect(minimal.reportId).toMatch(UUID);
      expect(Number.isInteger(minimal.createdAt)).toBe(true);
      expect(minimal.createdAt).toBeGreaterThanOrEqual(before - 1000);
      expect(minimal.createdAt).toBeLessThanOrEqual(after + 1000);
      const sent = body();
      expect(minimal).toEqual({ reportId: minimal.reportId, createdAt: minimal.createdAt, repoUrl: sent.repoUrl, apps: sent.apps, report: sent.report });

      const full = await upload(owner, body({ repoUrl: 'https://github.com/acme/web', ...OPTIONAL }), ALIAS);
      expect(Object.keys(full).sort()).toEqual([...SPEC_FIELDS].sort());
      expect(full).toEqual({ ...body({ repoUrl: 'https://github.com/acme/web', ...OPTIONAL }), reportId: full.reportId, createdAt: full.createdAt });
      expect(full.reportId).not.toBe(minimal.reportId);
      expect(full.createdAt).toBeGreaterThanOrEqual(minimal.createdAt);

      const listed = await list(owner);
      expect(listed).toEqual(newestFirst([minimal, full]));
      expect(listed[0]).toEqual(full); // uploaded later (or, in the same millisecond, the greater reportId)
      expect(await list(owner, {}, ALIAS)).toEqual(listed);
      for (const report of listed) expect(Object.keys(report).every((key) => SPEC_FIELDS.includes(key))).toBe(true);
    });

    it('keeps each optional field on its own, and only when sent', async () => {
      const owner = await newOwner();
      for (const [field, value] of Object.entries(OPTIONAL)) {
        const stored = await upload(owner, body({ [field]: value }));
        expect(Object.keys(stored).sort()).toEqual(['apps', 'createdAt', 'report', 'repoUrl', 'reportId', field].sort());
        expect(stored[field]).toEqual(value);
      }
      const [latest] = await list(owner, { limit: 1 });
      expect(Object.keys(latest).sort()).toEqual(['apps', 'createdAt', 'report', 'repoUrl', 'reportId', 'agentVersion'].sort());
      expect(await list(owner)).toHaveLength(Object.keys(OPTIONAL).length);
    });

    it('accepts every reasoningEffort, a 64-digit commit, false booleans and several apps, and answers them unchanged', async () => {
      const owner = await newOwner();
      for (const reasoningEffort of ['low', 'medium', 'high', 'off']) {
        const stored = await upload(owner, body({ modelUsed: { id: 'm', reasoningEffort } }));
        expect(stored.modelUsed).toEqual({ id: 'm', reasoningEffort });
      }
      const apps = { '.': { description: 'root' }, 'apps/web': { description: 'Web UI' }, 'services/api': { description: '' } };
      const report = { zeta_check: pass('z'), readme: { numerator: 0.5, denominator: 2, rationale: 'half' }, alpha_check: fail('') };
      const stored = await upload(owner, body({ apps, report, commitHash: 'f'.repeat(64), hasLocalChanges: false, hasNonRemoteCommits: false }));
      expect(stored).toMatchObject({ apps, report, commitHash: 'f'.repeat(64), hasLocalChanges: false, hasNonRemoteCommits: false });
      // Applications and criteria keep the order they were uploaded in.
      const [listed] = await list(owner, { limit: 1 });
      expect(Object.keys(listed.apps)).toEqual(Object.keys(apps));
      expect(Object.keys(listed.report)).toEqual(Object.keys(report));
    });

    it('accepts empty apps and every accepted URL scheme', async () => {
      const owner = await newOwner();
      for (const repoUrl of ['http://git.example.test/a/b', 'ssh://git@example.test/a/b.git', 'git://example.test/a/b.git', 'file:///srv/git/a/b']) {
        expect((await upload(owner, body({ repoUrl, apps: {} }))).repoUrl).toBe(repoUrl);
      }
    });

    it('accepts values at the limits', async () => {
      const owner = await newOwner();
      const report: Record<string, Evaluation> = {};
      for (let i = 0; i < REPORT_LIMITS.criteria; i++) report[`c_${i}`] = pass('r'.repeat(i === 0 ? REPORT_LIMITS.rationale : 1));
      const apps: Record<string, { description: string }> = {};
      for (let i = 0; i < REPORT_LIMITS.apps; i++)
        apps[i === 0 ? 'p'.repeat(REPORT_LIMITS.appPath) : `app${i}`] = { description: i === 0 ? 'd'.repeat(REPORT_LIMITS.description) : '' };
      const repoUrl = `https://example.test/${'x'.repeat(REPORT_LIMITS.repoUrl - 'https://example.test/'.length)}`;
      const stored = await upload(
        owner,
        body({ repoUrl, report, apps, branch: 'b'.repeat(255), agentVersion: 'v'.repeat(64), modelUsed: { id: 'm'.repeat(256), reasoningEffort: 'off' } }),
      );
      expect(Object.keys(stored.report)).toHaveLength(REPORT_LIMITS.criteria);
      expect(Object.keys(stored.apps)).toHaveLength(REPORT_LIMITS.apps);
      expect(stored.repoUrl).toBe(repoUrl);
      expect((await list(owner))[0]).toEqual(stored);
    });

    it('a 64-character criterion id is accepted', async () => {
      const owner = await newOwner();
      const id = `a${'b'.repeat(63)}`;
      expect(Object.keys((await upload(owner, body({ report: { [id]: pass() } }))).report)).toEqual([id]);
    });
  });

  // --- 2. paging -----------------------------------------------------------------------------

  describe('paging', () => {
    const REPOS = ['https://github.com/acme/one', 'https://github.com/acme/two', 'https://github.com/acme/three'];

    it('pages newest first with limit and startAfter, without overlap or gap, and filters by repoId', async () => {
      const owner = await newOwner();
      const uploaded: Json[] = [];
      for (let i = 0; i < 7; i++) uploaded.push(await upload(owner, body({ repoUrl: REPOS[i % 3], branch: `b${i}` })));
      const expected = newestFirst(uploaded);

      const pages: Json[][] = [];
      let startAfter: string | undefined;
      for (;;) {
        const page = await list(owner, { limit: 3, ...(startAfter ? { startAfter } : {}) });
        if (page.length === 0) break;
        pages.push(page);
        startAfter = page[page.length - 1].reportId as string;
        expect(pages.length).toBeLessThan(5);
      }
      expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
      expect(pages.flat()).toEqual(expected);
      expect(new Set(ids(pages.flat())).size).toBe(7);
      // The alias pages the same way.
      expect(await list(owner, { limit: 3, startAfter: pages[0][2].reportId }, ALIAS)).toEqual(pages[1]);

      // repoId: only that repository's reports, and paging within the filter.
      const repoId = repositoryId(REPOS[0]);
      const known = await repositories(owner);
      expect(known.map((repository) => repository.repoId).sort()).toEqual(REPOS.map(repositoryId).sort());
      const mine = expected.filter((report) => report.repoUrl === REPOS[0]);
      expect(mine).toHaveLength(3);
      expect(await list(owner, { repoId })).toEqual(mine);
      const first = await list(owner, { repoId, limit: 2 });
      expect(first).toEqual(mine.slice(0, 2));
      const second = await list(owner, { repoId, limit: 2, startAfter: first[1].reportId });
      expect(second).toEqual(mine.slice(2));
      expect(await list(owner, { repoId, limit: 2, startAfter: second[0].reportId })).toEqual([]);
      // A cursor from another repository of the organization still positions the filtered list.
      const other = expected.find((report) => report.repoUrl === REPOS[1])!;
      expect(await list(owner, { repoId, startAfter: other.reportId })).toEqual(
        newestFirst(mine.filter((report) => report.createdAt < other.createdAt || (report.createdAt === other.createdAt && report.reportId < other.reportId))),
      );

      // An unknown repoId lists nothing.
      expect(await list(owner, { repoId: 'repo_00000000000000000000' })).toEqual([]);
      expect(await list(owner, { repoId: 'anything at all' })).toEqual([]);
    });

    it('answers an empty list for an organization without reports', async () => {
      const owner = await newOwner();
      expect(await list(owner)).toEqual([]);
      expect(await list(owner, {}, ALIAS)).toEqual([]);
    });

    it('defaults to 20 per page and caps any larger limit at 100', async () => {
      const owner = await newOwner();
      const total = MAX_PAGE + 5;
      const uploaded: Json[] = [];
      for (let start = 0; start < total; start += 15) {
        const batch = Array.from({ length: Math.min(15, total - start) }, (_, i) =>
          upload(owner, body({ repoUrl: REPOS[(start + i) % 3], branch: `n${start + i}` })),
        );
        uploaded.push(...(await Promise.all(batch)));
      }
      const expected = newestFirst(uploaded);
      expect(DEFAULT_PAGE).toBe(20);

      expect(await list(owner)).toEqual(expected.slice(0, DEFAULT_PAGE));
      expect(await list(owner, {}, ALIAS)).toEqual(expected.slice(0, DEFAULT_PAGE));
      const capped = await list(owner, { limit: 1000 });
      expect(capped).toEqual(expected.slice(0, MAX_PAGE));
      expect(await list(owner, { limit: 101 })).toHaveLength(MAX_PAGE);
      expect(await list(owner, { limit: 100 })).toHaveLength(MAX_PAGE);
      expect(await list(owner, { limit: '99999999999999999999999' })).toHaveLength(MAX_PAGE);
      expect(await list(owner, { limit: 1 })).toEqual(expected.slice(0, 1));
      expect(await list(owner, { limit: 1000, startAfter: capped[MAX_PAGE - 1].reportId })).toEqual(expected.slice(MAX_PAGE));
    });
  });

  // --- 5. repository identity ----------------------------------------------------------------

  describe('repository identity', () => {
    it('three spellings of one repository are one repository; its repoId filters the list; scp-like URLs are answered as ssh://', async () => {
      const owner = await newOwner();
      const a = await upload(owner, body({ repoUrl: 'https://github.com/Acme/Widgets.git' }));
      const b = await upload(owner, body({ repoUrl: 'https://github.com/Acme/Widgets' }));
      const c = await upload(owner, body({ repoUrl: 'git@github.com:Acme/Widgets.git' }));
      expect(a.repoUrl).toBe('https://github.com/Acme/Widgets.git');
      expect(b.repoUrl).toBe('https://github.com/Acme/Widgets');
      expect(c.repoUrl).toBe('ssh://git@github.com/Acme/Widgets.git');

      const known = await repositories(owner);
      expect(known).toHaveLength(1);
      const [repository] = known;
      const latest = newestFirst([a, b, c])[0];
      expect(repository).toEqual({
        repoId: expect.stringMatching(REPO_ID),
        repoUrl: latest.repoUrl,
        reports: 3,
        latestReportId: latest.reportId,
        latestCreatedAt: latest.createdAt,
        level: 1,
      });
      expect(repository.repoId).toBe(repositoryId('https://github.com/Acme/Widgets'));

      const listed = await list(owner, { repoId: repository.repoId });
      expect(ids(listed)).toEqual(ids(newestFirst([a, b, c])));
      expect(listed.find((report) => report.reportId === c.reportId)!.repoUrl).toBe('ssh://git@github.com/Acme/Widgets.git');
      expect(await list(owner, { repoId: repository.repoId }, ALIAS)).toEqual(listed);
    });

    it('host case, credentials, ports and trailing slashes do not make another repository; the path case does', async () => {
      const owner = await newOwner();
      const spellings = [
        'https://github.com/acme/tools',
        'https://GitHub.COM/acme/tools/',
        'https://token@github.com/acme/tools.git',
        'ssh://git@github.com:22/acme/tools.git',
        'github.com:acme/tools.git',
      ];
      for (const repoUrl of spellings) await upload(owner, body({ repoUrl }));
      const other = await upload(owner, body({ repoUrl: 'https://github.com/Acme/Tools' }));
      const known = await repositories(owner);
      expect(known).toHaveLength(2);
      const byId = new Map(known.map((repository) => [repository.repoId, repository]));
      expect(byId.get(repositoryId('https://github.com/acme/tools'))?.reports).toBe(spellings.length);
      expect(byId.get(repositoryId('https://github.com/Acme/Tools'))).toMatchObject({
        reports: 1,
        latestReportId: other.reportId,
        repoUrl: 'https://github.com/Acme/Tools',
      });
      // Newest repository first.
      expect(known[0].latestReportId).toBe(other.reportId);
      expect((await list(owner, { repoId: repositoryId('https://github.com/acme/tools') })).length).toBe(spellings.length);
    });

    it.each([['https://github.com/acme/%zz'], ['file:///srv/%'], ['x@example.test:%zz'], ['git@host.example.test:%E0%A4%A'], ['git@[::1]:acme/repo.git']])(
      'repoUrl %s (a malformed escape or an unusual host) is stored or refused with 400 naming repoUrl, never 500',
      async (repoUrl) => {
        const owner = await newOwner();
        const res = await post(owner, body({ repoUrl }));
        expect(res.status).not.toBe(500);
        if (res.status === 201) {
          expectValid(validateServedReport, res.body);
          expect(ids(await list(owner))).toEqual([res.body.reportId]);
          expect(await repositories(owner)).toHaveLength(1);
        } else {
          expectInvalid(res, 'repoUrl');
          expect(await list(owner)).toEqual([]);
        }
      },
    );

    it('an scp-like address without a user is answered as its ssh:// URL', async () => {
      const owner = await newOwner();
      expect((await upload(owner, body({ repoUrl: 'gitlab.example.test:group/sub/project.git' }))).repoUrl).toBe(
        'ssh://gitlab.example.test/group/sub/project.git',
      );
    });
  });

  // --- 6. levels -----------------------------------------------------------------------------

  describe('levels', () => {
    it('the organization level is the floor of the mean of each repository’s latest level', async () => {
      const owner = await newOwner();
      const A = 'https://github.com/acme/a';
      const B = 'https://github.com/acme/b';
      const C = 'https://github.com/acme/c';
      await upload(owner, body({ repoUrl: A, report: reportAt(1) }));
      await upload(owner, body({ repoUrl: B, report: reportAt(3) }));
      expect(await level(owner)).toEqual({ level: 2, levelName: 'Documented', repositories: 2 });
      const levels = async () => Object.fromEntries((await repositories(owner)).map((repository) => [repository.repoId, repository.level]));
      expect(await levels()).toEqual({ [repositoryId(A)]: 1, [repositoryId(B)]: 3 });

      // A newer report of A counts, not its older one.
      await upload(owner, body({ repoUrl: A, report: reportAt(3) }));
      expect(await level(owner)).toEqual({ level: 3, levelName: 'Standardized', repositories: 2 });
      expect((await repositories(owner)).find((repository) => repository.repoId === repositoryId(A))).toMatchObject({ reports: 2, level: 3 });

      // (3 + 3 + 1) / 3 = 2.33: floor 2.
      await upload(owner, body({ repoUrl: C, report: reportAt(1) }));
      expect(await level(owner)).toEqual({ level: 2, levelName: 'Documented', repositories: 3 });

      // A newer, lower report lowers it: (1 + 3 + 1) / 3 = 1.67: floor 1.
      await upload(owner, body({ repoUrl: A, report: reportAt(1) }));
      expect(await level(owner)).toEqual({ level: 1, levelName: 'Functional', repositories: 3 });
    });

    it('a fresh organization has no level', async () => {
      const owner = await newOwner();
      expect(await level(owner)).toEqual({ level: null, levelName: null, repositories: 0 });
      expect(await repositories(owner)).toEqual([]);
    });

    it('the served schema of the organization level accepts the null level it answers', async () => {
      const res = await http()
        .get(LEVEL)
        .set((await newOwner()).auth);
      expectStatus(res, 200);
      expect(res.body).toEqual({ level: null, levelName: null, repositories: 0 });
      expectValid(validateServedLevel, res.body);
    });

    it('a level unlocks at 80% of the previous level’s criteria; partial passes and unknown ids do not count', async () => {
      const owner = await newOwner();
      const levelOf = async (report: Record<string, Evaluation>) => {
        const repoUrl = `https://example.test/levels/${randomUUID()}`;
        await upload(owner, body({ repoUrl, report }));
        return (await repositories(owner)).find((repository) => repository.repoId === repositoryId(repoUrl))!.level as number;
      };
      const passing = (criteria: string[]) => Object.fromEntries(criteria.map((id) => [id, pass()]));
      const level1 = idsOf(1);
      const need = Math.ceil(0.8 * level1.length);
      expect(await levelOf({ custom_check: pass() })).toBe(1);
      expect(await levelOf(passing(level1.slice(0, need)))).toBe(2);
      expect(await levelOf(passing(level1.slice(0, need - 1)))).toBe(1);
      expect(await levelOf({ ...passing(level1.slice(0, need - 1)), [level1[need - 1]]: { numerator: 2, denominator: 3, rationale: '2 / 3 apps' } })).toBe(1);
      expect(await levelOf({ ...passing(level1.slice(0, need - 1)), [level1[need - 1]]: { numerator: 3, denominator: 3, rationale: '3 / 3 apps' } })).toBe(2);
      expect(await levelOf({ ...passing(level1.slice(0, need - 1)), another_check: pass(), third_check: pass() })).toBe(1);
      // Level 3 is not reachable by skipping level 2.
      expect(await levelOf({ ...passing(level1), ...passing(idsOf(3)) })).toBe(2);
      expect(await levelOf(reportAt(4))).toBe(4);
      expect(await levelOf(passing(CRITERIA.map((criterion) => criterion.id)))).toBe(5);
    });
  });

  // --- 9. events -----------------------------------------------------------------------------

  describe('events', () => {
    it('publishes readiness.report.created once per upload, with reportId, repoId and level', async () => {
      const owner = await newOwner();
      const member = await createUser(t, Role.Member, { id: owner.organizationId, slug: owner.organizationSlug });
      const seen: Array<StoredEvent<'readiness.report_created'>> = [];
      const listener = (event: StoredEvent<'readiness.report_created'>) => seen.push(event);
      const emitter = t.app.get(EventEmitter2);
      emitter.on('readiness.report_created', listener);
      let first: Json;
      let second: Json;
      try {
        first = await upload(owner, body({ repoUrl: 'git@github.com:acme/events.git', report: reportAt(3) }));
        second = await upload(member, body({ repoUrl: 'https://github.com/acme/events' }), ALIAS);
        // Refused uploads publish nothing.
        expectStatus(await post(owner, body({ report: {} })), 400);
        expectStatus(await post(owner, withNumeratorOver()), 400);
        expectStatus(await post(await createUser(t, Role.Guest, { id: owner.organizationId, slug: owner.organizationSlug }), body()), 403);
        // Emitted once numbered, just after each answer; the log (a read settles first) holds the two and nothing else.
        await until(
          async () => seen.filter((event) => event.organizationId === owner.organizationId).length,
          (count) => count >= 2,
          'both events',
        );
        expect(await t.app.get(EventLog).read(owner.organizationId, { after: 0, limit: 100, types: ['readiness.report_created'] })).toHaveLength(2);
      } finally {
        emitter.off('readiness.report_created', listener);
      }
      const mine = seen.filter((event) => event.organizationId === owner.organizationId);
      expect(mine).toHaveLength(2);
      const repoId = repositoryId('https://github.com/acme/events');
      expect(mine[0]).toMatchObject({ type: 'readiness.report_created', data: { reportId: first.reportId, repoId, level: 3, uploadedBy: owner.userId } });
      expect(mine[1]).toMatchObject({ type: 'readiness.report_created', data: { reportId: second.reportId, repoId, level: 1, uploadedBy: member.userId } });
      expect(mine[0].occurredAt.getTime()).toBe(first.createdAt);
      expect(mine[1].occurredAt.getTime()).toBe(second.createdAt);
      expect((await repositories(owner))[0].repoId).toBe(repoId);
    });

    function withNumeratorOver(): Json {
      return body({ report: { readme: { numerator: 5, denominator: 1, rationale: 'x' } } });
    }
  });
});
