import { Role } from '../../src/modules/auth';
import { createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

/** Creating an API key without a usable name says what is wrong with the name, once. */
describe('POST /settings/api-keys: the name', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createUser(t, Role.Owner);
  });

  afterAll(async () => {
    await t.close();
  });

  const create = (body: unknown) =>
    t
      .http()
      .post('/settings/api-keys')
      .set(owner.auth)
      .send(body as object);

  it.each([
    ['missing', {}],
    ['null', { name: null }],
    ['missing, with an expiry', { expiresAt: '2099-01-01T00:00:00Z' }],
  ])('%s: one problem, "name is required"', async (_, body) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe('name: is required: a name for the key, 1 to 100 characters (e.g. "CI pipeline")');
    expect(res.body.metadata.errors).toEqual([{ field: 'name', message: expect.stringContaining('is required') }]);
  });

  it.each([
    ['empty', { name: '' }, 'name: must not be blank'],
    ['blank', { name: '   ' }, 'name: must not be blank'],
    ['two lines', { name: 'CI\npipeline' }, 'name: must be one line without control characters'],
    ['a number', { name: 42 }, 'name: must be a string'],
    ['too long', { name: 'k'.repeat(101) }, 'name: must be shorter than or equal to 100 characters'],
  ])('%s: says exactly that', async (_, body, detail) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(detail);
  });

  it('a good name still makes a key', async () => {
    const res = await create({ name: 'CI pipeline' });
    expect(res.status).toBe(201);
    expect(res.body.name).toBe('CI pipeline');
  });
});
