import Ajv, { ValidateFunction } from 'ajv';
import { Role } from '../../src/modules/auth';
import { CRITERIA, LEVEL_NAMES, PILLARS, UNLOCK_SHARE } from '../../src/modules/readiness/domain/criteria';
import { repositoryId } from '../../src/modules/readiness/domain/repository-id';
import { createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectStatus } from '../utils/v0-errors';

/**
 * The two readiness reads the web console needs (added): the criteria catalogue, to group a report by pillar, and a
 * repository's level over time, for its trend. Against the real app: shapes as documented, order, limits, tenancy.
 */

type Evaluation = { numerator: number; denominator: number; rationale: string };
const CRITERIA_PATH = '/api/organization/readiness-criteria';
const levelsPath = (repoId: string) => `/api/organization/readiness-repositories/${repoId}/levels`;

/** A report whose known criteria give exactly `level`. */
function reportAt(level: number): Record<string, Evaluation> {
  const report: Record<string, Evaluation> = {};
  for (const criterion of CRITERIA) report[criterion.id] = { numerator: criterion.level < level ? 1 : 0, denominator: 1, rationale: 'test' };
  return report;
}

describe('Readiness: criteria and level history', () => {
  let t: TestApp;
  let validateCriteria: ValidateFunction;
  let validateHistory: ValidateFunction;

  beforeAll(async () => {
    t = await startTestApp();
    const served = (await t.http().get('/docs-json').expect(200)).body as object;
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addFormat('uuid', /^[0-9a-f-]{36}$/);
    ajv.addSchema({ ...served, $id: 'openapi' });
    const at = (path: string) => ajv.compile({ $ref: `openapi#/paths/${path.replaceAll('/', '~1')}/get/responses/200/content/application~1json/schema` });
    validateCriteria = at(CRITERIA_PATH);
    validateHistory = at('/api/organization/readiness-repositories/{repoId}/levels');
  });

  afterAll(() => t.close());

  const upload = async (user: TestUser, repoUrl: string, level: number) => {
    const res = await t
      .http()
      .post('/api/organization/maturity-level-reports')
      .set(user.auth)
      .send({ repoUrl, apps: { '.': { description: 'root' } }, report: reportAt(level) });
    expectStatus(res, 201);
    return res.body as { reportId: string; createdAt: number };
  };

  it('the criteria catalogue: every criterion with its pillar, level and scope, the pillars and level names; any role reads it', async () => {
    const guest = await createUser(t, Role.Guest);
    const res = await t.http().get(CRITERIA_PATH).set(guest.auth);
    expectStatus(res, 200);
    validateCriteria(res.body);
    expect(validateCriteria.errors ?? []).toEqual([]);
    expect(res.body.unlockShare).toBe(UNLOCK_SHARE);
    expect(res.body.levels).toEqual(LEVEL_NAMES.map((name, i) => ({ level: i + 1, name })));
    expect(res.body.pillars.map((pillar: { id: string }) => pillar.id)).toEqual(Object.keys(PILLARS));
    expect(res.body.criteria).toHaveLength(29);
    expect(res.body.criteria).toContainEqual({
      id: 'agents_md',
      title: 'AGENTS.md tells agents how to work here',
      pillar: 'documentation',
      level: 2,
      scope: 'repository',
    });
    expect((await t.http().get(CRITERIA_PATH)).status).toBe(401);
  });

  it("a repository's level over time: the level each report gave, oldest first; limit keeps the newest", async () => {
    const owner = await createUser(t, Role.Owner);
    const member = await createUser(t, Role.Guest, { id: owner.organizationId, slug: owner.organizationSlug });
    const url = 'https://github.com/acme/trend';
    const made = [];
    // Spellings of one repository are one history; another repository's reports are not in it.
    for (const [spelling, level] of [
      [url, 1],
      [`${url}.git`, 3],
      ['git@github.com:acme/trend.git', 2],
      [url, 4],
    ] as const)
      made.push({ ...(await upload(owner, spelling, level)), level });
    await upload(owner, 'https://github.com/acme/other', 5);
    const repoId = repositoryId(url);
    const res = await t.http().get(levelsPath(repoId)).set(member.auth);
    expectStatus(res, 200);
    validateHistory(res.body);
    expect(validateHistory.errors ?? []).toEqual([]);
    expect(res.body).toEqual({ repoId, levels: made.map(({ reportId, createdAt, level }) => ({ reportId, createdAt, level })) });

    const newest = await t.http().get(levelsPath(repoId)).query({ limit: '2' }).set(owner.auth).expect(200);
    expect(newest.body.levels.map((point: { level: number }) => point.level)).toEqual([2, 4]);
    for (const limit of ['0', '-1', '1.5', 'x']) expectStatus(await t.http().get(levelsPath(repoId)).query({ limit }).set(owner.auth), 400);
    // Far above the cap: the cap.
    expect(
      (
        await t
          .http()
          .get(levelsPath(repoId))
          .query({ limit: '9'.repeat(50) })
          .set(owner.auth)
      ).status,
    ).toBe(200);
  });

  it("a repository the organization has no report of, another organization's included, is 404 repository_not_found", async () => {
    const owner = await createUser(t, Role.Owner);
    const stranger = await createUser(t, Role.Owner);
    await upload(owner, 'https://github.com/acme/private', 2);
    for (const repoId of [repositoryId('https://github.com/acme/private'), 'repo_00000000000000000000', 'nonsense']) {
      const res = await t.http().get(levelsPath(repoId)).set(stranger.auth);
      expectStatus(res, 404);
      expect(res.body).toMatchObject({ status: 404, metadata: { code: 'repository_not_found' }, requestId: expect.any(String) });
    }
  });
});
