import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventEmitter2 } from '@nestjs/event-emitter';
import Ajv, { ValidateFunction } from 'ajv';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { CRITERIA } from '../../src/modules/readiness/domain/criteria';
import { MAX_PAGE, DEFAULT_PAGE, REPORT_LIMITS } from '../../src/modules/readiness/domain/report';
import { repositoryId } from '../../src/modules/readiness/domain/repository-id';
import type { StoredEvent } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectStatus } from '../utils/v0-errors';
import { startTestApp, TestApp } from '../utils/test-app';

/**
 * Readiness reports over real HTTP against the real application: upload and list at both
 * reference paths, paging, bad queries and bodies, repository identity, levels, organizations,
 * roles and the `readiness.report_created` event.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;
type Evaluation = { numerator: number; denominator: number; rationale: string };

const REPORTS = '/api/organization/maturity-level-reports';
const ALIAS = '/api/organization/agent-readiness-reports';
const REPOSITORIES = '/api/organization/readiness-repositories';
const LEVEL = '/api/organization/maturity-level';
const REFERENCE = join(__dirname, '../reference/readiness-reports-api.openapi.json');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const REPO_ID = /^repo_[0-9a-f]{20}$/;
const SPEC_FIELDS = ['reportId', 'createdAt', 'repoUrl', 'apps', 'report', 'commitHash', 'branch', 'hasLocalChanges', 'hasNonRemoteCommits', 'modelUsed', 'agentVersion'];

// --- report bodies ----------------------------------------------------------------------------

const pass = (rationale = 'found'): Evaluation => ({ numerator: 1, denominator: 1, rationale });
const fail = (rationale = 'missing'): Evaluation => ({ numerator: 0, denominator: 1, rationale });
const idsOf = (level: number) => CRITERIA.filter((criterion) => criterion.level === level).map((criterion) => criterion.id);

/** A report whose known criteria give exactly `level`: every criterion below it passes, none at or above it. */
function reportAt(level: number): Record<string, Evaluation> {
  const report: Record<string, Evaluation> = {};
  for (const criterion of CRITERIA) report[criterion.id] = criterion.level < level ? pass() : fail();
  return report;
}

const body = (extra: Json = {}): Json => ({
  repoUrl: 'https://github.com/acme/api',
  apps: { '.': { description: 'The whole repository' } },
  report: { readme: pass('README.md at the root'), linter: { numerator: 1, denominator: 2, rationale: '1 / 2 apps pass' } },
  ...extra,
});

/** Every optional field of the spec's report, with valid values. */
const OPTIONAL: Json = {
  commitHash: 'a'.repeat(40),
  branch: 'main',
  hasLocalChanges: false,
  hasNonRemoteCommits: true,
  modelUsed: { id: 'model-x', reasoningEffort: 'medium' },
  agentVersion: '1.2.3',
};

function nested(depth: number): Json {
  let value: Json = { leaf: true };
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

describe('Readiness reports', () => {
  let t: TestApp;
  let validateServedReport: ValidateFunction;
  let validateServedList: ValidateFunction;
  let validateServedAliasList: ValidateFunction;
  let validateServedRepositories: ValidateFunction;
  let validateServedLevel: ValidateFunction;
  let validateReferenceReport: ValidateFunction;
  let validateReferenceList: ValidateFunction;
  let validateReferenceError: ValidateFunction;

  beforeAll(async () => {
    t = await startTestApp();
    const served = (await t.http().get('/docs-json').expect(200)).body as Json;
    const reference = JSON.parse(readFileSync(REFERENCE, 'utf8')) as Json;
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addFormat('uuid', UUID);
    ajv.addFormat('uri', (value: string) => URL.canParse(value));
    ajv.addSchema({ ...served, $id: 'openapi' });
    ajv.addSchema({ ...reference, $id: 'reference' });
    const path = (p: string) => p.replaceAll('/', '~1');
    validateServedReport = ajv.compile({ $ref: `openapi#/paths/${path(REPORTS)}/post/responses/201/content/application~1json/schema` });
    validateServedList = ajv.compile({ $ref: `openapi#/paths/${path(REPORTS)}/get/responses/200/content/application~1json/schema` });
    validateServedAliasList = ajv.compile({ $ref: `openapi#/paths/${path(ALIAS)}/get/responses/200/content/application~1json/schema` });
    validateServedRepositories = ajv.compile({ $ref: `openapi#/paths/${path(REPOSITORIES)}/get/responses/200/content/application~1json/schema` });
    validateServedLevel = ajv.compile({ $ref: `openapi#/paths/${path(LEVEL)}/get/responses/200/content/application~1json/schema` });
    validateReferenceReport = ajv.compile({ $ref: 'reference#/components/schemas/ReadinessReport' });
    validateReferenceList = ajv.compile({ $ref: 'reference#/components/schemas/ListReadinessReportsResponse' });
    validateReferenceError = ajv.compile({ $ref: 'reference#/components/schemas/ErrorResponse' });
  });

  afterAll(() => t.close());

  // --- helpers -------------------------------------------------------------------------------

  const http = () => t.http();

  function expectValid(validate: ValidateFunction, value: unknown) {
    validate(value);
    expect(validate.errors ?? []).toEqual([]);
  }

  /** A new organization and its owner, so counts and levels start from nothing. */
  const newOwner = () => createUser(t, Role.Owner);

  const post = (user: TestUser | undefined, payload: unknown, path = REPORTS) => {
    const req = http().post(path);
    if (user) req.set(user.auth);
    return req.send(payload as object);
  };

  async function upload(user: TestUser, payload: Json, path = REPORTS): Promise<Json> {
    const res = await post(user, payload, path);
    expectStatus(res, 201);
    expectValid(validateServedReport, res.body);
    expectValid(validateReferenceReport, res.body);
    return res.body as Json;
  }

  async function list(user: TestUser, query: Record<string, string | number> = {}, path = REPORTS): Promise<Json[]> {
    const res = await http().get(path).query(query).set(user.auth);
    expectStatus(res, 200);
    expect(Object.keys(res.body)).toEqual(['reports']);
    expectValid(path === ALIAS ? validateServedAliasList : validateServedList, res.body);
    expectValid(validateReferenceList, res.body);
    return res.body.reports as Json[];
  }

  async function repositories(user: TestUser): Promise<Json[]> {
    const res = await http().get(REPOSITORIES).set(user.auth);
    expectStatus(res, 200);
    expectValid(validateServedRepositories, res.body);
    return res.body.repositories as Json[];
  }

  /** The organization's level; the served schema is checked here for a level, and for `null` in its own test. */
  async function level(user: TestUser): Promise<Json> {
    const res = await http().get(LEVEL).set(user.auth);
    expectStatus(res, 200);
    if (res.body.level !== null) expectValid(validateServedLevel, res.body);
    return res.body as Json;
  }

  /** Newest first: createdAt descending, then reportId descending. */
  const newestFirst = (reports: Json[]) =>
    [...reports].sort((a, b) => b.createdAt - a.createdAt || (a.reportId < b.reportId ? 1 : a.reportId > b.reportId ? -1 : 0));
  const ids = (reports: Json[]) => reports.map((report) => report.reportId as string);

  /** The readiness error body: exactly title, detail, status, requestId and metadata (with its code). */
  function expectReadinessError(res: Response, status: number, code: string) {
    expectStatus(res, status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(res.body).sort()).toEqual(['detail', 'metadata', 'requestId', 'status', 'title']);
    expect(res.body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String), requestId: expect.any(String), metadata: { code } });
    expect((res.body.detail as string).length).toBeGreaterThan(0);
    expect((res.body.requestId as string).length).toBeGreaterThan(0);
    expectValid(validateReferenceError, res.body);
  }

  /** 400 naming `field` in `detail` and among `metadata.errors`. */
  function expectInvalid(res: Response, field: string, code = 'validation_failed') {
    expectReadinessError(res, 400, code);
    const escaped = field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    expect(res.body.detail).toMatch(new RegExp(`^${escaped}: `));
    expect(res.body.metadata.errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
  }

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
      for (let i = 0; i < REPORT_LIMITS.apps; i++) apps[i === 0 ? 'p'.repeat(REPORT_LIMITS.appPath) : `app${i}`] = { description: i === 0 ? 'd'.repeat(REPORT_LIMITS.description) : '' };
      const repoUrl = `https://example.test/${'x'.repeat(REPORT_LIMITS.repoUrl - 'https://example.test/'.length)}`;
      const stored = await upload(owner, body({ repoUrl, report, apps, branch: 'b'.repeat(255), agentVersion: 'v'.repeat(64), modelUsed: { id: 'm'.repeat(256), reasoningEffort: 'off' } }));
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
      expect(await list(owner, { repoId, startAfter: other.reportId })).toEqual(newestFirst(mine.filter((report) => report.createdAt < other.createdAt || (report.createdAt === other.createdAt && report.reportId < other.reportId))));

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
        const batch = Array.from({ length: Math.min(15, total - start) }, (_, i) => upload(owner, body({ repoUrl: REPOS[(start + i) % 3], branch: `n${start + i}` })));
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

  // --- 3. bad query --------------------------------------------------------------------------

  describe('bad queries', () => {
    let owner: TestUser;
    let report: Json;

    beforeAll(async () => {
      owner = await newOwner();
      report = await upload(owner, body());
    });

    it.each([['0'], ['-1'], ['1.5'], ['abc'], [''], ['1e2'], [' 5'], ['0x10'], ['01']])('limit=%j answers 400 naming limit', async (limit) => {
      for (const path of [REPORTS, ALIAS]) {
        const res = await http().get(`${path}?limit=${encodeURIComponent(limit)}`).set(owner.auth);
        expectInvalid(res, 'limit');
      }
    });

    it('a repeated limit answers 400 naming limit', async () => {
      expectInvalid(await http().get(`${REPORTS}?limit=1&limit=2`).set(owner.auth), 'limit');
    });

    it('an unknown query parameter answers 400 naming it', async () => {
      expectInvalid(await http().get(`${REPORTS}?cursor=abc`).set(owner.auth), 'cursor');
    });

    it.each([
      ['malformed', () => 'not-a-uuid'],
      ['empty', () => ''],
      ['a random UUID', () => randomUUID()],
      ['another organization’s reportId', () => 'other'],
    ])('startAfter %s answers 400 unknown_start_after', async (_label, value) => {
      let startAfter = value();
      if (startAfter === 'other') {
        const outsider = await newOwner();
        startAfter = (await upload(outsider, body())).reportId as string;
      }
      for (const path of [REPORTS, ALIAS]) {
        const res = await http().get(path).query({ startAfter }).set(owner.auth);
        expectInvalid(res, 'startAfter', 'unknown_start_after');
        expect(res.body.detail).toMatch(/startAfter/);
      }
    });

    it('startAfter with our own last reportId answers an empty page, not 400', async () => {
      expect(await list(owner, { startAfter: report.reportId })).toEqual([]);
    });

    it.each([
      ['GET', REPORTS],
      ['GET', ALIAS],
      ['POST', REPORTS],
      ['POST', ALIAS],
      ['GET', REPOSITORIES],
      ['GET', LEVEL],
    ])('%s %s without a key (or with a bad one) answers 401 in the readiness body', async (method, path) => {
      const send = (auth?: string) => {
        const req = method === 'GET' ? http().get(path) : http().post(path).send(body());
        req.set('x-request-id', 'readiness-401');
        if (auth) req.set('Authorization', auth);
        return req;
      };
      const missing = await send();
      expectReadinessError(missing, 401, 'missing_credentials');
      expect(missing.body.requestId).toBe('readiness-401');
      expectReadinessError(await send('Bearer not-a-key'), 401, 'malformed_credentials');
      expectReadinessError(await send(`Bearer ${owner.key}x`), 401, 'invalid_credentials');
      expectReadinessError(await send('Basic dXNlcjpwYXNz'), 401, 'malformed_credentials');
    });

    it('a 401 upload stores nothing', async () => {
      expectStatus(await post(undefined, body()), 401);
      expect(await list(owner)).toHaveLength(1);
    });
  });

  // --- 4. bad uploads ------------------------------------------------------------------------

  describe('bad uploads', () => {
    let owner: TestUser;

    beforeAll(async () => {
      owner = await newOwner();
      await upload(owner, body());
    });

    /** The upload is refused with 400 naming `field`, at both paths, and nothing is stored. */
    async function refused(payload: unknown, field: string) {
      for (const path of [REPORTS, ALIAS]) expectInvalid(await post(owner, payload, path), field);
      expect(await list(owner)).toHaveLength(1);
      expect((await repositories(owner)).map((repository) => repository.reports)).toEqual([1]);
    }

    const without = (field: string) => {
      const copy = body(OPTIONAL);
      delete copy[field];
      return copy;
    };
    const withEvaluation = (evaluation: unknown, id = 'readme') => body({ report: { [id]: evaluation } });

    it.each<[string, () => unknown, string]>([
      ['numerator greater than denominator', () => withEvaluation({ numerator: 2, denominator: 1, rationale: 'x' }), 'report.readme.numerator'],
      ['numerator greater than denominator on another id', () => body({ report: { readme: pass(), custom_thing: { numerator: 3.5, denominator: 3, rationale: '' } } }), 'report.custom_thing.numerator'],
      ['denominator 0', () => withEvaluation({ numerator: 0, denominator: 0, rationale: 'x' }), 'report.readme.denominator'],
      ['denominator 0.5', () => withEvaluation({ numerator: 0, denominator: 0.5, rationale: 'x' }), 'report.readme.denominator'],
      ['negative numerator', () => withEvaluation({ numerator: -1, denominator: 1, rationale: 'x' }), 'report.readme.numerator'],
      ['missing numerator', () => withEvaluation({ denominator: 1, rationale: 'x' }), 'report.readme.numerator'],
      ['missing denominator', () => withEvaluation({ numerator: 1, rationale: 'x' }), 'report.readme.denominator'],
      ['missing rationale', () => withEvaluation({ numerator: 1, denominator: 1 }), 'report.readme.rationale'],
      ['missing repoUrl', () => without('repoUrl'), 'repoUrl'],
      ['missing apps', () => without('apps'), 'apps'],
      ['missing report', () => without('report'), 'report'],
      ['empty report', () => body({ report: {} }), 'report'],
      ['criterion id Bad-Id', () => withEvaluation(pass(), 'Bad-Id'), 'report.Bad-Id'],
      ['criterion id 1abc', () => withEvaluation(pass(), '1abc'), 'report.1abc'],
      ['criterion id of 65 characters', () => withEvaluation(pass(), `a${'b'.repeat(64)}`), `report.a${'b'.repeat(64)}`],
      ['criterion id a b', () => withEvaluation(pass(), 'a b'), 'report.a b'],
      ['criterion id _x', () => withEvaluation(pass(), '_x'), 'report._x'],
      ['unknown top-level field', () => body({ droidVersion: '1.0.0' }), 'droidVersion'],
      ['server-assigned reportId sent', () => body({ reportId: randomUUID() }), 'reportId'],
      ['server-assigned createdAt sent', () => body({ createdAt: Date.now() }), 'createdAt'],
      ['unknown field in an evaluation', () => withEvaluation({ ...pass(), score: 1 }), 'report.readme.score'],
      ['unknown field in an app', () => body({ apps: { web: { description: 'x', owner: 'me' } } }), 'apps.web.owner'],
      ['unknown field in modelUsed', () => body({ modelUsed: { id: 'm', reasoningEffort: 'low', temperature: 1 } }), 'modelUsed.temperature'],
      ['repoUrl not a url', () => body({ repoUrl: 'not a url' }), 'repoUrl'],
      ['repoUrl javascript:', () => body({ repoUrl: 'javascript:alert(1)' }), 'repoUrl'],
      ['repoUrl ftp://', () => body({ repoUrl: 'ftp://x/y' }), 'repoUrl'],
      ['repoUrl empty', () => body({ repoUrl: '' }), 'repoUrl'],
      ['repoUrl with a newline', () => body({ repoUrl: 'https://github.com/a/b\n' }), 'repoUrl'],
      ['repoUrl too long', () => body({ repoUrl: `https://example.test/${'x'.repeat(REPORT_LIMITS.repoUrl)}` }), 'repoUrl'],
      ['reasoningEffort max', () => body({ modelUsed: { id: 'm', reasoningEffort: 'max' } }), 'modelUsed.reasoningEffort'],
      ['modelUsed without id', () => body({ modelUsed: { reasoningEffort: 'low' } }), 'modelUsed.id'],
      ['modelUsed without reasoningEffort', () => body({ modelUsed: { id: 'm' } }), 'modelUsed.reasoningEffort'],
      ['commitHash xyz', () => body({ commitHash: 'xyz' }), 'commitHash'],
      ['commitHash in upper case', () => body({ commitHash: 'A'.repeat(40) }), 'commitHash'],
      ['commitHash of 39 digits', () => body({ commitHash: 'a'.repeat(39) }), 'commitHash'],
      ['commitHash of 41 digits', () => body({ commitHash: 'a'.repeat(41) }), 'commitHash'],
      ['branch empty', () => body({ branch: '' }), 'branch'],
      ['branch too long', () => body({ branch: 'b'.repeat(256) }), 'branch'],
      ['agentVersion too long', () => body({ agentVersion: 'v'.repeat(65) }), 'agentVersion'],
      ['rationale too long', () => withEvaluation(pass('r'.repeat(REPORT_LIMITS.rationale + 1))), 'report.readme.rationale'],
      ['rationale with NUL', () => withEvaluation(pass('a\u0000b')), 'report.readme.rationale'],
      ['app description too long', () => body({ apps: { web: { description: 'd'.repeat(REPORT_LIMITS.description + 1) } } }), 'apps.web.description'],
      ['app without description', () => body({ apps: { web: {} } }), 'apps.web.description'],
      ['empty app path', () => body({ apps: { '': { description: 'x' } } }), 'apps.'],
      ['too many criteria', () => body({ report: Object.fromEntries(Array.from({ length: REPORT_LIMITS.criteria + 1 }, (_, i) => [`c_${i}`, pass()])) }), 'report'],
      ['too many apps', () => body({ apps: Object.fromEntries(Array.from({ length: REPORT_LIMITS.apps + 1 }, (_, i) => [`app${i}`, { description: '' }])) }), 'apps'],
      // wrong types everywhere
      ['repoUrl a number', () => body({ repoUrl: 42 }), 'repoUrl'],
      ['repoUrl null', () => body({ repoUrl: null }), 'repoUrl'],
      ['apps an array', () => body({ apps: [] }), 'apps'],
      ['apps a string', () => body({ apps: 'web' }), 'apps'],
      ['app a string', () => body({ apps: { web: 'x' } }), 'apps.web'],
      ['app description a number', () => body({ apps: { web: { description: 5 } } }), 'apps.web.description'],
      ['report an array', () => body({ report: [pass()] }), 'report'],
      ['report null', () => body({ report: null }), 'report'],
      ['evaluation a string', () => withEvaluation('pass'), 'report.readme'],
      ['evaluation null', () => withEvaluation(null), 'report.readme'],
      ['numerator a string', () => withEvaluation({ numerator: '1', denominator: 1, rationale: 'x' }), 'report.readme.numerator'],
      ['denominator null', () => withEvaluation({ numerator: 0, denominator: null, rationale: 'x' }), 'report.readme.denominator'],
      ['rationale a number', () => withEvaluation({ numerator: 1, denominator: 1, rationale: 5 }), 'report.readme.rationale'],
      ['commitHash a number', () => body({ commitHash: 1234 }), 'commitHash'],
      ['branch a number', () => body({ branch: 5 }), 'branch'],
      ['hasLocalChanges a string', () => body({ hasLocalChanges: 'yes' }), 'hasLocalChanges'],
      ['hasNonRemoteCommits a number', () => body({ hasNonRemoteCommits: 1 }), 'hasNonRemoteCommits'],
      ['hasLocalChanges null', () => body({ hasLocalChanges: null }), 'hasLocalChanges'],
      ['modelUsed a string', () => body({ modelUsed: 'gpt' }), 'modelUsed'],
      ['modelUsed null', () => body({ modelUsed: null }), 'modelUsed'],
      ['modelUsed.id a number', () => body({ modelUsed: { id: 1, reasoningEffort: 'low' } }), 'modelUsed.id'],
      ['agentVersion a boolean', () => body({ agentVersion: true }), 'agentVersion'],
      ['body an array', () => [body()], 'body'],
    ])('%s: 400, nothing stored', async (_label, payload, field) => {
      await refused(payload(), field);
    });

    it.each([
      ['body nested deeper than 64 levels', () => body({ report: { readme: { ...pass(), extra: nested(70) } } })],
      ['deep nesting under an unknown field', () => body({ deep: nested(200) })],
    ])('%s: 400 json_too_deep before it is parsed, nothing stored', async (_label, payload) => {
      for (const path of [REPORTS, ALIAS]) expectReadinessError(await post(owner, payload(), path), 400, 'json_too_deep');
      expect(await list(owner)).toHaveLength(1);
    });

    it('names every problem of a body with several', async () => {
      const res = await post(owner, { repoUrl: 5, apps: [], report: { readme: { numerator: 2, denominator: 0, rationale: 'x' } }, extra: 1 });
      expectReadinessError(res, 400, 'validation_failed');
      const fields = (res.body.metadata.errors as Array<{ field: string }>).map((error) => error.field);
      expect(fields).toEqual(expect.arrayContaining(['repoUrl', 'apps', 'report.readme.denominator', 'extra']));
      expect(await list(owner)).toHaveLength(1);
    });

    it('a body that is not JSON answers 400 invalid_json', async () => {
      for (const path of [REPORTS, ALIAS]) {
        const res = await http().post(path).set(owner.auth).set('content-type', 'application/json').send('{"repoUrl": ');
        expectReadinessError(res, 400, 'invalid_json');
      }
      expect(await list(owner)).toHaveLength(1);
    });

    it('a JSON scalar body answers 400 naming body', async () => {
      for (const raw of ['"https://github.com/a/b"', '42', 'true']) {
        const res = await http().post(REPORTS).set(owner.auth).set('content-type', 'application/json').send(raw);
        expectInvalid(res, 'body');
      }
      expect(await list(owner)).toHaveLength(1);
    });

    it('no body at all answers 400, not 500', async () => {
      expectInvalid(await http().post(REPORTS).set(owner.auth), 'body');
      expect(await list(owner)).toHaveLength(1);
    });

    it.each([['text/plain'], ['application/x-www-form-urlencoded'], ['application/xml']])('content type %s answers 415', async (contentType) => {
      for (const path of [REPORTS, ALIAS]) {
        const res = await http().post(path).set(owner.auth).set('content-type', contentType).send(JSON.stringify(body()));
        expectReadinessError(res, 415, 'unsupported_media_type');
      }
      expect(await list(owner)).toHaveLength(1);
    });

    it('a 65-level body is refused with 400 before anything walks it, a 64-level one is checked normally', async () => {
      // `{report: {readme: {extra: ...}}}`: three levels around the nested value.
      expectReadinessError(await post(owner, body({ report: { readme: { ...pass(), extra: nested(62) } } })), 400, 'json_too_deep');
      expectInvalid(await post(owner, body({ report: { readme: { ...pass(), extra: nested(61) } } })), 'report.readme.extra');
      expect(await list(owner)).toHaveLength(1);
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
      expect(repository).toEqual({ repoId: expect.stringMatching(REPO_ID), repoUrl: latest.repoUrl, reports: 3, latestReportId: latest.reportId, latestCreatedAt: latest.createdAt, level: 1 });
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
      expect(byId.get(repositoryId('https://github.com/Acme/Tools'))).toMatchObject({ reports: 1, latestReportId: other.reportId, repoUrl: 'https://github.com/Acme/Tools' });
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
      expect((await upload(owner, body({ repoUrl: 'gitlab.example.test:group/sub/project.git' }))).repoUrl).toBe('ssh://gitlab.example.test/group/sub/project.git');
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
      const res = await http().get(LEVEL).set((await newOwner()).auth);
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

  // --- 7. organizations ----------------------------------------------------------------------

  describe('organizations', () => {
    it('are isolated: another organization sees none of these reports, repositories or level', async () => {
      const owner = await newOwner();
      const ours = await upload(owner, body({ repoUrl: 'https://github.com/acme/secret', report: reportAt(3) }));
      const outsider = await newOwner();

      expect(await list(outsider)).toEqual([]);
      expect(await list(outsider, {}, ALIAS)).toEqual([]);
      expect(await list(outsider, { repoId: repositoryId(ours.repoUrl) })).toEqual([]);
      expect(await repositories(outsider)).toEqual([]);
      expect(await level(outsider)).toEqual({ level: null, levelName: null, repositories: 0 });
      for (const path of [REPORTS, ALIAS]) {
        expectInvalid(await http().get(path).query({ startAfter: ours.reportId }).set(outsider.auth), 'startAfter', 'unknown_start_after');
      }

      // The same repository in the other organization is counted there only.
      const theirs = await upload(outsider, body({ repoUrl: 'https://github.com/acme/secret', report: reportAt(1) }));
      expect(ids(await list(outsider))).toEqual([theirs.reportId]);
      expect(ids(await list(owner))).toEqual([ours.reportId]);
      expect((await repositories(owner))[0]).toMatchObject({ reports: 1, latestReportId: ours.reportId, level: 3 });
      expect((await repositories(outsider))[0]).toMatchObject({ reports: 1, latestReportId: theirs.reportId, level: 1 });
      expect(await level(owner)).toEqual({ level: 3, levelName: 'Standardized', repositories: 1 });
      expect(await level(outsider)).toEqual({ level: 1, levelName: 'Functional', repositories: 1 });
      expectInvalid(await http().get(REPORTS).query({ startAfter: theirs.reportId }).set(owner.auth), 'startAfter', 'unknown_start_after');
    });
  });

  // --- 8. roles ------------------------------------------------------------------------------

  describe('roles', () => {
    it('every role reads; owners, managers and members upload; guests get 403 and store nothing', async () => {
      const org = await createOrganization(t);
      const owner = await createUser(t, Role.Owner, org);
      const manager = await createUser(t, Role.Manager, org);
      const member = await createUser(t, Role.Member, org);
      const guest = await createUser(t, Role.Guest, org);

      const uploaded = [await upload(owner, body()), await upload(manager, body(), ALIAS), await upload(member, body()), await upload(member, body(), ALIAS)];
      for (const path of [REPORTS, ALIAS]) {
        const res = await post(guest, body(), path);
        expectReadinessError(res, 403, 'insufficient_role');
      }
      for (const user of [owner, manager, member, guest]) {
        expect(ids(await list(user))).toEqual(ids(newestFirst(uploaded)));
        expect(ids(await list(user, {}, ALIAS))).toEqual(ids(newestFirst(uploaded)));
        expect(await repositories(user)).toHaveLength(1);
        expect((await level(user)).repositories).toBe(1);
      }
    });

    it('a guest’s invalid upload is 403, not 400', async () => {
      const guest = await createUser(t, Role.Guest);
      expectReadinessError(await post(guest, { nonsense: true }), 403, 'insufficient_role');
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
        await new Promise((resolve) => setTimeout(resolve, 50));
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
