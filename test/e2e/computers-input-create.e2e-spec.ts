import { randomUUID } from 'node:crypto';
import { DEFAULT_CONTROLS, OrganizationControls, OrganizationControlsReader } from '../../src/modules/auth/contracts/organization-controls-reader';
import { TestUser } from '../utils/factories';
import { expectStatus, expectV0Error } from '../utils/v0-errors';
import { TestApp } from '../utils/test-app';
import { byomBody, COMPUTERS, computersInputFixture, expectInvalid, Json, localBody } from '../utils/fixtures/computers-input';

/** The v0 computers API's create body, its limits, and what the organization's enterprise controls allow, over real HTTP. */

describe('Computers API (v0): input, roles and limits', () => {
  const fixture = computersInputFixture();
  const { http, post, create, get, list, emailOf, storedRow } = fixture;
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let guest: TestUser;
  beforeAll(() => ({ t, owner, member, guest } = fixture));

  // --- the create body -----------------------------------------------------------------------

  describe('create body', () => {
    it.each([
      ['name missing', { provider: 'byom' }, 'name'],
      ['provider missing', { name: 'x' }, 'provider'],
    ])('%s: 400 naming the field', async (_, body, field) => {
      const res = await post(owner, body);
      expectV0Error(res, 400, 'validation_failed');
      expect(res.body.metadata.errors.map((e: Json) => e.field)).toContain(field);
    });

    it.each([['aws'], ['LOCAL'], ['Byom'], [''], [' local'], [5], [null], [['local']]])('provider %j: 400 provider', async (provider) => {
      expectInvalid(await post(owner, { name: 'x', provider }), 'provider');
    });

    it('an unknown field: 400 naming it', async () => {
      expectInvalid(await post(owner, byomBody({ color: 'red' })), 'color');
      expectInvalid(await post(owner, localBody({ region: 'eu' })), 'region');
    });

    it('an unknown field inside source: 400 naming its path', async () => {
      expectInvalid(await post(owner, localBody({ source: { kind: 'template', templateId: 'blank', size: 'xl' } })), 'source.size');
    });

    it.each([
      ['an array', [byomBody()]],
      ['a string', JSON.stringify('laptop')],
    ])('a body that is %s: 400', async (_, body) => {
      const res = await http().post(COMPUTERS).set(owner.auth).set('content-type', 'application/json').send(JSON.stringify(body));
      expectV0Error(res, 400, 'validation_failed');
    });

    it('a body that is not JSON: 400', async () => {
      const res = await http().post(COMPUTERS).set(owner.auth).set('content-type', 'application/json').send('{"name": ');
      expectStatus(res, 400);
      expect(res.body.metadata.code).toBe('invalid_json');
    });

    it.each([
      ['name', 5],
      ['name', null],
      ['name', ['laptop']],
      ['hostId', 7],
      ['remoteUser', 42],
      ['repos', 'https://example.com/x.git'],
      ['autoInstallDeps', 'yes'],
      ['autoInstallDeps', 1],
      ['serviceAccountId', 12],
      ['source', 'blank'],
    ])('%s of the wrong type (%j): 400 naming it', async (field, value) => {
      const res = await post(owner, { ...localBody(), [field]: value });
      expectV0Error(res, 400, 'validation_failed');
      expect(res.body.metadata.errors.map((e: Json) => e.field)).toContain(field);
    });

    it('a repo of the wrong type: 400 naming its index', async () => {
      expectInvalid(await post(owner, localBody({ repos: ['https://example.com/a.git', 5] })), 'repos[1]');
    });

    it.each([['host-1'], ['0b9a4c1e3f554d439d3a2f8a7f1f0b11'], ['0b9a4c1e-3f55-4d43-9d3a-2f8a7f1f0b1'], ['{0b9a4c1e-3f55-4d43-9d3a-2f8a7f1f0b11}'], ['']])(
      'hostId %j: 400 hostId',
      async (hostId) => {
        expectInvalid(await post(owner, byomBody({ hostId })), 'hostId');
      },
    );

    it.each([['-dev'], ['.dev'], ['de v'], ['dev/x'], ['dév'], ['a$b'], ['$'], ['dev\n'], ['root:x']])('remoteUser %j: 400 remoteUser', async (remoteUser) => {
      expectInvalid(await post(owner, byomBody({ remoteUser })), 'remoteUser');
    });

    it.each([['dev'], ['_svc'], ['build-bot.1'], ['machine$'], ['A1'], ['0']])('remoteUser %j is a POSIX user name: 201', async (remoteUser) => {
      const computer = await create(owner, byomBody({ remoteUser }));
      expect(computer.remoteUser).toBe(remoteUser);
    });

    it.each([['   '], ['\t'], ['a\nb'], ['tab\there'], ['\r\n'], ['\u00a0']])('name %j (blank or with control characters): 400 name', async (name) => {
      expectInvalid(await post(owner, byomBody({ name })), 'name');
    });

    it.each([['a\u001b[31mred'], ['a\u0001b'], ['\u001b'], ['a\u007fb'], ['a\u009bb']])('name %j (one control character): 400 name', async (name) => {
      expectInvalid(await post(owner, byomBody({ name })), 'name');
    });

    it('a long name ending in a newline is refused promptly (the name pattern is linear, not quadratic)', async () => {
      const res = await post(owner, byomBody({ name: `${'x'.repeat(200_000)}\n` }));
      expectInvalid(res, 'name');
    });

    it('a NUL in the name: 400 name', async () => {
      expectInvalid(await post(owner, byomBody({ name: 'lap\u0000top' })), 'name');
      expectInvalid(await post(owner, byomBody({ name: '\u0000' })), 'name');
    });

    it('an unpaired surrogate in the name: 400 name', async () => {
      expectInvalid(await post(owner, byomBody({ name: 'lap\ud800top' })), 'name');
    });

    it('names may be any visible text, spaces inside included', async () => {
      const computer = await create(owner, byomBody({ name: ' Ünïcödé laptop 💻 ' }));
      expect(computer.name).toBe(' Ünïcödé laptop 💻 ');
      expect((await get(owner, computer.id)).name).toBe(' Ünïcödé laptop 💻 ');
    });

    it('serviceAccountId "" is 400', async () => {
      expectInvalid(await post(owner, byomBody({ serviceAccountId: '' })), 'serviceAccountId');
    });

    it.each([
      ['{kind: "other"}', { kind: 'other', templateId: 'blank' }, 'source.kind'],
      ['{kind: "Template"}', { kind: 'Template', templateId: 'blank' }, 'source.kind'],
      ['{} (no kind)', {}, 'source.kind'],
      ['{kind: 5}', { kind: 5 }, 'source.kind'],
      ['a template without templateId', { kind: 'template' }, 'source.templateId'],
      ['an empty templateId', { kind: 'template', templateId: '' }, 'source.templateId'],
      ['a templateId that is not a string', { kind: 'template', templateId: 1 }, 'source.templateId'],
      ['a computer without computerId', { kind: 'computer' }, 'source.computerId'],
      ['a computerId that is not a UUID', { kind: 'computer', computerId: 'not-a-uuid' }, 'source.computerId'],
      ['a template carrying a computerId', { kind: 'template', templateId: 'blank', computerId: randomUUID() }, 'source.computerId'],
    ])('source %s: 400 naming %s', async (_, source, field) => {
      expectInvalid(await post(owner, localBody({ source })), field);
    });

    it('every problem is listed in metadata.errors, and detail names the first', async () => {
      const res = await post(owner, { name: '', provider: 'aws', hostId: 'x', repos: 'r', autoInstallDeps: 'no', extra: 1 });
      expectV0Error(res, 400, 'validation_failed');
      const fields = (res.body.metadata.errors as Json[]).map((e) => e.field);
      expect(new Set(fields)).toEqual(new Set(['name', 'provider', 'hostId', 'repos', 'autoInstallDeps', 'extra']));
      expect(res.body.detail).toMatch(new RegExp(`^${escape(fields[0])}: .*\\(and \\d+ more problems\\)$`));
    });

    it('nothing is created by a refused body', async () => {
      const before = (await list(owner)).length;
      await post(owner, byomBody({ name: '' })).expect(400);
      await post(owner, localBody({ hostId: randomUUID() })).expect(400);
      await post(owner, localBody({ repos: ['./relative'] })).expect(400);
      expect((await list(owner)).length).toBe(before);
    });
  });

  // --- limits --------------------------------------------------------------------------------

  describe('limits', () => {
    it.each([
      [0, 400],
      [1, 201],
      [63, 201],
      [64, 400],
    ])('a name of %i characters on create: %i', async (length, status) => {
      const res = await post(owner, byomBody({ name: 'n'.repeat(length) }));
      if (status === 400) expectInvalid(res, 'name');
      else {
        expectStatus(res, 201);
        expect(res.body.name).toBe('n'.repeat(length));
      }
    });

    it.each([
      [0, 400],
      [1, 201],
      [63, 201],
      [64, 400],
    ])('a remoteUser of %i characters on create: %i', async (length, status) => {
      const res = await post(owner, byomBody({ remoteUser: 'u'.repeat(length) }));
      if (status === 400) expectInvalid(res, 'remoteUser');
      else {
        expectStatus(res, 201);
        expect(res.body.remoteUser).toBe('u'.repeat(length));
      }
    });

    it("a local computer's remoteUser has the same limits", async () => {
      expectInvalid(await post(owner, localBody({ remoteUser: 'u'.repeat(64) })), 'remoteUser');
      expectInvalid(await post(owner, localBody({ remoteUser: '' })), 'remoteUser');
      expect((await create(owner, localBody({ remoteUser: 'u'.repeat(63) }))).remoteUser).toBe('u'.repeat(63));
    });

    it.each([
      [0, 400],
      [1, 200],
      [63, 200],
      [64, 400],
    ])('a name of %i characters on update: %i', async (length, status) => {
      const computer = await create(owner, byomBody());
      const res = await http()
        .patch(`${COMPUTERS}/${computer.id}`)
        .set(owner.auth)
        .send({ name: 'm'.repeat(length) });
      if (status === 400) {
        expectInvalid(res, 'name');
        expect((await get(owner, computer.id)).name).toBe('laptop');
      } else {
        expectStatus(res, 200);
        expect(res.body.name).toBe('m'.repeat(length));
        expect((await get(owner, computer.id)).name).toBe('m'.repeat(length));
      }
    });

    it.each([
      [0, 400],
      [1, 200],
      [63, 200],
      [64, 400],
    ])('a remoteUser of %i characters on update: %i', async (length, status) => {
      const computer = await create(owner, byomBody());
      const res = await http()
        .patch(`${COMPUTERS}/${computer.id}`)
        .set(owner.auth)
        .send({ remoteUser: 'r'.repeat(length) });
      if (status === 400) {
        expectInvalid(res, 'remoteUser');
        expect((await get(owner, computer.id)).remoteUser).toBe('dev');
      } else {
        expectStatus(res, 200);
        expect(res.body.remoteUser).toBe('r'.repeat(length));
      }
    });

    it('63 characters are counted as characters, not bytes or UTF-16 units', async () => {
      const name = '💻'.repeat(63);
      const computer = await create(owner, byomBody({ name }));
      expect((await get(owner, computer.id)).name).toBe(name);
      expectInvalid(await post(owner, byomBody({ name: '💻'.repeat(64) })), 'name');
    });

    it('20 repos are accepted, 21 are 400 naming repos', async () => {
      const repos = (n: number) => Array.from({ length: n }, (_, i) => `https://example.com/org/repo-${i}.git`);
      const computer = await create(owner, localBody({ repos: repos(20) }));
      expect(computer.provisioningSteps.map((s: Json) => s.id)).toEqual(['create-computer', 'clone-repos']);
      expect((await storedRow(computer.id)).repos).toEqual(repos(20));
      expectInvalid(await post(owner, localBody({ repos: repos(21) })), 'repos');
    });

    it('a repo of 2048 characters is accepted, 2049 is 400 naming it', async () => {
      const repo = (length: number) => `https://example.com/${'a'.repeat(length - 'https://example.com/'.length)}`;
      expect(repo(2048)).toHaveLength(2048);
      const computer = await create(owner, localBody({ repos: [repo(2048)] }));
      expect((await storedRow(computer.id)).repos).toEqual([repo(2048)]);
      expectInvalid(await post(owner, localBody({ repos: ['https://example.com/ok.git', repo(2049)] })), 'repos[1]');
    });

    it('an empty repo string is 400 naming it', async () => {
      expectInvalid(await post(owner, localBody({ repos: [''] })), 'repos[0]');
    });

    it('a 1 MB name is 400, not 500, and is not echoed back', async () => {
      const res = await post(owner, byomBody({ name: 'x'.repeat(1000 * 1000) }));
      expectInvalid(res, 'name');
      expect(JSON.stringify(res.body).length).toBeLessThan(2000);
    });

    it('a 1 MB repo is 400, not 500', async () => {
      expectInvalid(await post(owner, localBody({ repos: [`https://example.com/${'x'.repeat(1000 * 1000)}`] })), 'repos[0]');
    });

    it('a body over BODY_LIMIT_BYTES (1 MiB) is 413 with that limit', async () => {
      const res = await post(owner, byomBody({ name: 'x'.repeat(1024 * 1024) }));
      expectV0Error(res, 413, 'payload_too_large');
      expect(res.body.metadata.limitBytes).toBe(1024 * 1024);
    });
  });

  // --- enterprise controls ---------------------------------------------------------------------

  describe('enterprise controls', () => {
    let controls: Partial<OrganizationControls> = {};
    let spy: jest.SpyInstance;

    beforeAll(() => {
      // Stand in for the EnterpriseControls module, which binds this reader when it lands.
      spy = jest.spyOn(t.app.get(OrganizationControlsReader), 'read').mockImplementation(async () => ({ ...DEFAULT_CONTROLS, ...controls }));
    });

    afterEach(() => {
      controls = {};
    });

    afterAll(() => spy.mockRestore());

    it('managedComputersEnabled: false makes local 403 computer_provider_disabled; byom still 201', async () => {
      controls = { managedComputersEnabled: false };
      const res = await post(member, localBody());
      expectV0Error(res, 403, 'computer_provider_disabled');
      expect(res.body.metadata.control).toBe('managedComputersEnabled');
      await create(member, byomBody());
    });

    it('byomComputersEnabled: false makes byom 403 computer_provider_disabled; local still 201', async () => {
      controls = { byomComputersEnabled: false };
      const res = await post(owner, byomBody());
      expectV0Error(res, 403, 'computer_provider_disabled');
      expect(res.body.metadata.control).toBe('byomComputersEnabled');
      await create(owner, localBody());
    });

    it.each([
      ['managed', 'managedComputersAllowedEmails', localBody],
      ['byom', 'byomComputersAllowedEmails', byomBody],
    ] as const)('a non-empty %s allow-list without the caller: 403 computer_creation_not_allowed', async (_, control, body) => {
      controls = { [control]: ['someone-else@example.test'] };
      const res = await post(member, body());
      expectV0Error(res, 403, 'computer_creation_not_allowed');
      expect(res.body.metadata.control).toBe(control);
    });

    it.each([
      ['managed', 'managedComputersAllowedEmails', localBody],
      ['byom', 'byomComputersAllowedEmails', byomBody],
    ] as const)('a %s allow-list with the caller, in any case: 201', async (_, control, body) => {
      const email = await emailOf(member);
      for (const listed of [email, email.toUpperCase(), email.replace(/^./, (c) => c.toUpperCase())]) {
        controls = { [control]: ['someone-else@example.test', listed] };
        await create(member, body());
      }
    });

    it('the allow-list of one kind does not limit the other', async () => {
      controls = { managedComputersAllowedEmails: ['someone-else@example.test'] };
      await create(member, byomBody());
      controls = { byomComputersAllowedEmails: ['someone-else@example.test'] };
      await create(member, localBody());
    });

    it('guests stay 403 insufficient_role, whatever the controls', async () => {
      controls = { managedComputersAllowedEmails: [await emailOf(guest)] };
      expectV0Error(await post(guest, localBody()), 403, 'insufficient_role');
    });
  });
});
