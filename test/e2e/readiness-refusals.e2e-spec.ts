import { randomUUID } from 'node:crypto';
import { Role } from '../../src/modules/auth';
import { REPORT_LIMITS } from '../../src/modules/readiness/domain/report';
import { repositoryId } from '../../src/modules/readiness/domain/repository-id';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectStatus } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { ALIAS, body, Json, LEVEL, OPTIONAL, pass, readinessFixture, reportAt, REPORTS, REPOSITORIES } from '../utils/fixtures/readiness';

/** Readiness reports over real HTTP: bad queries and bad uploads refused (storing nothing), other organizations and roles. */

function nested(depth: number): Json {
  let value: Json = { leaf: true };
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

describe('Readiness reports', () => {
  const fixture = readinessFixture();
  const { http, newOwner, post, upload, list, repositories, level, newestFirst, ids, expectReadinessError, expectInvalid } = fixture;
  let t: TestApp;
  beforeAll(() => ({ t } = fixture));

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
        const res = await http()
          .get(`${path}?limit=${encodeURIComponent(limit)}`)
          .set(owner.auth);
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
      [
        'numerator greater than denominator on another id',
        () => body({ report: { readme: pass(), custom_thing: { numerator: 3.5, denominator: 3, rationale: '' } } }),
        'report.custom_thing.numerator',
      ],
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
      [
        'too many criteria',
        () => body({ report: Object.fromEntries(Array.from({ length: REPORT_LIMITS.criteria + 1 }, (_, i) => [`c_${i}`, pass()])) }),
        'report',
      ],
      [
        'too many apps',
        () => body({ apps: Object.fromEntries(Array.from({ length: REPORT_LIMITS.apps + 1 }, (_, i) => [`app${i}`, { description: '' }])) }),
        'apps',
      ],
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
});
