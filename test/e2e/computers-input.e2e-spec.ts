import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, symlink } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Ajv, { ValidateFunction } from 'ajv';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import { DEFAULT_CONTROLS, OrganizationControls, OrganizationControlsReader } from '../../src/modules/auth/organization-controls.reader';
import { createGitRepo, reposRoot } from '../utils/git-fixtures';
import { createOrganization, createServiceAccount, createUser, TestUser } from '../utils/factories';
import { expectInvalid as expectInvalidField, expectStatus, expectV0Error, messageFor } from '../utils/v0-errors';
import { startTestApp, TestApp } from '../utils/test-app';

/** Steps never run here (PROVISIONING_CONCURRENCY 0), so managed computers stay provisioning: quotas large enough not to matter (test/e2e/computer-quotas.e2e-spec.ts tests them). */
const ROOMY_QUOTAS = { COMPUTERS_PER_ORGANIZATION: '1000', PROVISIONING_PER_ORGANIZATION: '1000', LOCAL_AGENTS_PER_ORGANIZATION: '1000' };

/** The v0 computers API's bad input, roles and limits, over real HTTP against the real application. */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = Record<string, any>;
type Org = { id: string; slug: string };

const COMPUTERS = '/api/v0/computers';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Fields the create (and get) response adds to the list shape. */
const CREATE_ONLY = ['hostId', 'clonedRepoDirectories', 'ownerId', 'ownerPrincipalKind', 'computerSource', 'agentToken'];

const byomBody = (extra: Json = {}): Json => ({ name: 'laptop', provider: 'byom', hostId: randomUUID(), remoteUser: 'dev', ...extra });
const localBody = (extra: Json = {}): Json => ({ name: 'box', provider: 'local', ...extra });

/** Invalid input names `field` first. */
const expectInvalid = (res: Response, field: string) => expectInvalidField(res, field, { first: true });

describe('Computers API (v0): input, roles and limits', () => {
  let t: TestApp;
  let root: string;
  let validateComputer: ValidateFunction;
  let validateList: ValidateFunction;

  let orgA: Org;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let member2: TestUser;
  let guest: TestUser;
  let outsider: TestUser; // owner of another organization
  let bot: TestUser; // a service account of orgA
  let outsiderBot: TestUser; // a service account of another organization

  beforeAll(async () => {
    root = await reposRoot();
    t = await startTestApp({ ...ROOMY_QUOTAS, LOCAL_REPOS_DIR: root, PROVISIONING_CONCURRENCY: '0' });
    const doc = (await t.http().get('/docs-json').expect(200)).body as Json;
    // The app's own published schemas, as a client would use them.
    const ajv = new Ajv({ strict: false, discriminator: true, allErrors: true });
    ajv.addFormat('uuid', UUID);
    ajv.addFormat('uri', (value: string) => URL.canParse(value));
    ajv.addSchema({ ...doc, $id: 'openapi' });
    validateComputer = ajv.compile({ $ref: 'openapi#/components/schemas/Computer' });
    validateList = ajv.compile({ $ref: 'openapi#/paths/~1api~1v0~1computers/get/responses/200/content/application~1json/schema' });

    orgA = await createOrganization(t);
    owner = await createUser(t, Role.Owner, orgA);
    manager = await createUser(t, Role.Manager, orgA);
    member = await createUser(t, Role.Member, orgA);
    member2 = await createUser(t, Role.Member, orgA);
    guest = await createUser(t, Role.Guest, orgA);
    outsider = await createUser(t, Role.Owner, await createOrganization(t));
    bot = await createServiceAccount(t, orgA);
    outsiderBot = await createServiceAccount(t, await createOrganization(t));
  });

  afterAll(() => t.close());

  // --- helpers -------------------------------------------------------------------------------

  const http = () => t.http();
  const post = (user: TestUser, body: unknown) => http().post(COMPUTERS).set(user.auth).send(body as object);

  function expectValid(validate: ValidateFunction, value: unknown) {
    validate(value);
    expect(validate.errors ?? []).toEqual([]);
  }

  async function create(user: TestUser, body: Json): Promise<Json> {
    const res = await post(user, body);
    expectStatus(res, 201);
    expectValid(validateComputer, res.body);
    return res.body as Json;
  }

  async function get(user: TestUser, id: string): Promise<Json> {
    const res = await http().get(`${COMPUTERS}/${id}`).set(user.auth);
    expectStatus(res, 200);
    expectValid(validateComputer, res.body);
    return res.body as Json;
  }

  async function list(user: TestUser): Promise<Json[]> {
    const res = await http().get(COMPUTERS).set(user.auth);
    expectStatus(res, 200);
    expectValid(validateList, res.body);
    return res.body.computers as Json[];
  }

  async function emailOf(user: TestUser): Promise<string> {
    const [row] = await t.app.get(DataSource).query('SELECT email FROM users WHERE id = $1', [user.userId]);
    return row.email as string;
  }

  async function storedRow(id: string): Promise<Json> {
    const [row] = await t.app.get(DataSource).query('SELECT repos, auto_install_deps FROM computers WHERE id = $1', [id]);
    return row as Json;
  }

  /** Every route on one computer, as [label, request]. */
  const routesOn = (id: string) =>
    [
      ['GET', () => http().get(`${COMPUTERS}/${id}`)],
      ['PATCH', () => http().patch(`${COMPUTERS}/${id}`).send({ name: 'renamed' })],
      ['DELETE', () => http().delete(`${COMPUTERS}/${id}`)],
      ['POST retry', () => http().post(`${COMPUTERS}/${id}/retry`)],
      ['POST agent-token', () => http().post(`${COMPUTERS}/${id}/agent-token`)],
    ] as const;

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

    it('a local computer\'s remoteUser has the same limits', async () => {
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
      const res = await http().patch(`${COMPUTERS}/${computer.id}`).set(owner.auth).send({ name: 'm'.repeat(length) });
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
      const res = await http().patch(`${COMPUTERS}/${computer.id}`).set(owner.auth).send({ remoteUser: 'r'.repeat(length) });
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

  // --- byom ------------------------------------------------------------------------------------

  describe('provider byom', () => {
    it('hostId and remoteUser are required: 400 naming each, hostId first', async () => {
      const res = await post(owner, { name: 'laptop', provider: 'byom' });
      expectInvalid(res, 'hostId');
      expect(res.body.metadata.errors.map((e: Json) => e.field)).toEqual(['hostId', 'remoteUser']);
    });

    it('remoteUser alone missing: 400 remoteUser', async () => {
      expectInvalid(await post(owner, { name: 'laptop', provider: 'byom', hostId: randomUUID() }), 'remoteUser');
    });

    it('hostId alone missing: 400 hostId', async () => {
      expectInvalid(await post(owner, { name: 'laptop', provider: 'byom', remoteUser: 'dev' }), 'hostId');
    });

    it.each([
      ['repos', { repos: ['https://example.com/x.git'] }],
      ['autoInstallDeps', { autoInstallDeps: true }],
      ['source', { source: { kind: 'template', templateId: 'blank' } }],
      ['source', { source: { kind: 'computer', computerId: randomUUID() } }],
    ])('%s is for managed computers: 400 naming it', async (field, extra) => {
      expectInvalid(await post(owner, byomBody(extra)), field);
    });

    it('every managed-only field is named at once', async () => {
      const res = await post(owner, byomBody({ repos: ['https://example.com/x.git'], autoInstallDeps: true, source: { kind: 'template', templateId: 'blank' } }));
      expectInvalid(res, 'repos');
      expect(res.body.metadata.errors.map((e: Json) => e.field)).toEqual(['repos', 'autoInstallDeps', 'source']);
    });

    it('repos: [] and autoInstallDeps: false ask for nothing and are accepted', async () => {
      const computer = await create(owner, byomBody({ repos: [], autoInstallDeps: false }));
      expect(computer).toMatchObject({ providerType: 'byom', status: 'active' });
      expect(computer.provisioningSteps).toBeUndefined();
    });

    it('is active at once, with the hostId given', async () => {
      const body = byomBody();
      const computer = await create(owner, body);
      expect(computer).toMatchObject({ providerType: 'byom', status: 'active', hostId: body.hostId, remoteUser: 'dev' });
      expect(computer.computerSource).toBeUndefined();
    });
  });

  // --- local (managed) -------------------------------------------------------------------------

  describe('provider local', () => {
    it('giving a hostId: 400 hostId', async () => {
      expectInvalid(await post(owner, localBody({ hostId: randomUUID() })), 'hostId');
    });

    it('assigns a hostId and defaults remoteUser to the server\'s user', async () => {
      const computer = await create(owner, localBody());
      expect(computer.hostId).toMatch(UUID);
      expect(computer.remoteUser).toBe(userInfo().username);
      expect(computer).toMatchObject({ providerType: 'local', status: 'provisioning', clonedRepoDirectories: [] });
      expect(computer.provisioningSteps).toEqual([
        { id: 'create-computer', name: expect.any(String), status: 'pending', installSessionId: expect.any(String) },
      ]);
      const again = await create(owner, localBody());
      expect(again.hostId).not.toBe(computer.hostId);
    });

    it('keeps a remoteUser that is given', async () => {
      expect((await create(owner, localBody({ remoteUser: 'builder' }))).remoteUser).toBe('builder');
    });

    it('source template "blank" is accepted and shown back', async () => {
      const computer = await create(owner, localBody({ source: { kind: 'template', templateId: 'blank' } }));
      expect(computer.computerSource).toEqual({ kind: 'template', templateId: 'blank' });
      expect((await get(owner, computer.id)).computerSource).toEqual({ kind: 'template', templateId: 'blank' });
    });

    it.each([['ubuntu'], ['Blank'], ['blank '], ['../blank']])('source templateId %j: 400 source.templateId', async (templateId) => {
      const res = await post(owner, localBody({ source: { kind: 'template', templateId } }));
      expectInvalid(res, 'source.templateId');
      expect(messageFor(res, 'source.templateId')).toContain('blank');
    });

    it('copying a computer of another organization: 404 computer_not_found naming source.computerId', async () => {
      const theirs = await create(outsider, localBody({ repos: ['https://example.com/secret.git'] }));
      const res = await post(owner, localBody({ source: { kind: 'computer', computerId: theirs.id } }));
      expectV0Error(res, 404, 'computer_not_found');
      expect(res.body.metadata.field).toBe('source.computerId');
      expect(JSON.stringify(res.body)).not.toContain('secret');
    });

    it('copying an unknown computer: 404 computer_not_found naming source.computerId', async () => {
      const res = await post(owner, localBody({ source: { kind: 'computer', computerId: randomUUID() } }));
      expectV0Error(res, 404, 'computer_not_found');
      expect(res.body.metadata.field).toBe('source.computerId');
    });

    it('a member copying another member\'s computer: 404', async () => {
      const theirs = await create(member2, localBody());
      const res = await post(member, localBody({ source: { kind: 'computer', computerId: theirs.id } }));
      expectV0Error(res, 404, 'computer_not_found');
      expect(res.body.metadata.field).toBe('source.computerId');
    });

    it('copying a visible computer takes its repos and autoInstallDeps when the body gives none', async () => {
      const repos = ['https://example.com/org/one.git', 'git@example.com:org/two.git'];
      const original = await create(member, localBody({ repos, autoInstallDeps: true }));
      const copy = await create(member, localBody({ name: 'copy', source: { kind: 'computer', computerId: original.id } }));
      expect(copy.computerSource).toEqual({ kind: 'computer', computerId: original.id });
      expect(copy.provisioningSteps.map((s: Json) => s.id)).toEqual(['create-computer', 'clone-repos', 'install-dependencies']);
      expect(await storedRow(copy.id)).toEqual({ repos, auto_install_deps: true });
      // An owner may copy a member's computer.
      const ownersCopy = await create(owner, localBody({ source: { kind: 'computer', computerId: original.id } }));
      expect(await storedRow(ownersCopy.id)).toEqual({ repos, auto_install_deps: true });
    });

    it('copying a computer keeps what the body gives', async () => {
      const original = await create(owner, localBody({ repos: ['https://example.com/org/one.git'], autoInstallDeps: true }));
      const noRepos = await create(owner, localBody({ repos: [], source: { kind: 'computer', computerId: original.id } }));
      expect(noRepos.provisioningSteps.map((s: Json) => s.id)).toEqual(['create-computer']);
      expect(await storedRow(noRepos.id)).toEqual({ repos: [], auto_install_deps: true });
      const noInstall = await create(owner, localBody({ autoInstallDeps: false, source: { kind: 'computer', computerId: original.id } }));
      expect(noInstall.provisioningSteps.map((s: Json) => s.id)).toEqual(['create-computer', 'clone-repos']);
      expect(await storedRow(noInstall.id)).toEqual({ repos: ['https://example.com/org/one.git'], auto_install_deps: false });
    });
  });

  // --- repos ---------------------------------------------------------------------------------

  describe('repos', () => {
    it.each([
      ['https://github.com/org/repo.git'],
      ['http://git.example.com/repo'],
      ['ssh://git@example.com/org/repo.git'],
      ['ssh://git@example.com:2222/org/repo.git'],
      ['git://example.com/repo.git'],
      ['git@github.com:org/repo.git'],
      ['deploy.bot@git.example.com:org/repo'],
    ])('%s is accepted', async (repo) => {
      const computer = await create(owner, localBody({ repos: [repo] }));
      expect(computer.provisioningSteps.map((s: Json) => s.id)).toEqual(['create-computer', 'clone-repos']);
      expect((await storedRow(computer.id)).repos).toEqual([repo]);
    });

    it.each([
      ['a URL with a password', 'https://u:p@example.com/x.git', 'password'],
      ['an ssh URL with a password', 'ssh://git:secret@example.com/x.git', 'password'],
      ['a URL with only a password', 'https://:p@example.com/x.git', 'password'],
      ['an https URL with a user (a token, often)', 'https://token-user@example.com/x.git', 'credentials'],
      ['a relative path', './repo', ''],
      ['a bare name', 'repo', ''],
      ['a parent path', '../repo', ''],
      ['a home path', '~/repo', ''],
      ['the ext transport', 'ext::sh -c touch% /tmp/pwned', ''],
      ['the ext transport without spaces', 'ext::ssh', ''],
      ['an option', '-oProxyCommand=touch /tmp/pwned', ''],
      ['an option without spaces', '-oProxyCommand=calc', ''],
      ['--upload-pack', '--upload-pack=touch', ''],
      ['an ftp URL', 'ftp://example.com/x.git', ''],
      ['a URL with a space', 'https://example.com/a b.git', ''],
      ['a URL with a newline', 'https://example.com/a\n.git', ''],
      ['a URL without host', 'git:/x.git', ''],
      ['a URL that is only a scheme', 'https://', ''],
      ['a file URL with a host', 'file://otherhost/srv/x.git', ''],
      ['an scp address without user', 'example.com:org/repo.git', ''],
      ['an scp address whose user is an option', '-oProxyCommand@evil.example:/x', ''],
      ['an ssh URL whose host is an option', 'ssh://-oProxyCommand=touch/x', ''],
      ['an ssh URL whose user is an option', 'ssh://-oProxy@example.com/x', ''],
      ['a git URL whose host starts with a dash', 'git://-host/x', ''],
    ])('%s is 400 naming its index', async (_, repo, mentions) => {
      const res = await post(owner, localBody({ repos: ['https://example.com/a.git', 'git@example.com:b.git', 'https://example.com/c.git', repo] }));
      expectInvalid(res, 'repos[3]');
      expect(res.body.metadata.errors).toHaveLength(1);
      expect(messageFor(res, 'repos[3]')).toContain(mentions);
    });

    it('every bad repo is named', async () => {
      const res = await post(owner, localBody({ repos: ['./a', 'https://example.com/ok.git', 'ext::x', '/etc'] }));
      expectInvalid(res, 'repos[0]');
      expect(res.body.metadata.errors.map((e: Json) => e.field)).toEqual(['repos[0]', 'repos[2]', 'repos[3]']);
    });

    it('local paths and file:// URLs under LOCAL_REPOS_DIR are accepted', async () => {
      const repo = await createGitRepo(root, 'accepted');
      for (const value of [repo, pathToFileURL(repo).href, join(root, 'not-yet-there'), `${root}/sub/../accepted`]) {
        const computer = await create(owner, localBody({ repos: [value] }));
        expect((await storedRow(computer.id)).repos).toEqual([value]);
      }
    });

    it.each([
      ['/etc', () => '/etc'],
      ['/etc/passwd as a file URL', () => 'file:///etc/passwd'],
      ['a path climbing out', () => join(root, '..', 'elsewhere')],
      ['an unnormalized path climbing out', () => `${root}/../elsewhere`],
      ['a sibling sharing its prefix', () => `${root}-evil`],
      ['a file URL climbing out', () => `${pathToFileURL(root).href}/../elsewhere`],
      ['the parent directory', () => join(root, '..')],
    ])('%s, outside LOCAL_REPOS_DIR: 400 mentioning LOCAL_REPOS_DIR', async (_, repo) => {
      const res = await post(owner, localBody({ repos: [repo()] }));
      expectInvalid(res, 'repos[0]');
      expect(messageFor(res, 'repos[0]')).toContain('LOCAL_REPOS_DIR');
    });

    it('a symlink inside LOCAL_REPOS_DIR that points outside: 400', async () => {
      const outside = await mkdtemp(join(tmpdir(), 'ap-outside-'));
      await createGitRepo(outside, 'private');
      await symlink(join(outside, 'private'), join(root, 'escape'));
      for (const value of [join(root, 'escape'), pathToFileURL(join(root, 'escape')).href, join(root, 'escape', '.git')]) {
        const res = await post(owner, localBody({ repos: [value] }));
        expectInvalid(res, 'repos[0]');
        expect(messageFor(res, 'repos[0]')).toContain('LOCAL_REPOS_DIR');
      }
    });

    it('a symlinked directory on the way out: 400', async () => {
      const outside = await mkdtemp(join(tmpdir(), 'ap-outside-'));
      await mkdir(join(outside, 'deep'), { recursive: true });
      await symlink(outside, join(root, 'door'));
      expectInvalid(await post(owner, localBody({ repos: [join(root, 'door', 'deep')] })), 'repos[0]');
    });

    it('a symlink inside LOCAL_REPOS_DIR that stays inside is accepted', async () => {
      const repo = await createGitRepo(root, 'target');
      await symlink(repo, join(root, 'alias'));
      await create(owner, localBody({ repos: [join(root, 'alias')] }));
    });
  });

  // --- response shapes -------------------------------------------------------------------------

  describe('responses', () => {
    it('the create response carries the additions, the agent token and the relay URLs', async () => {
      const body = byomBody();
      const computer = await create(owner, body);
      expect(computer).toEqual({
        id: expect.stringMatching(UUID),
        name: 'laptop',
        providerType: 'byom',
        createdAt: expect.any(Number),
        hostId: body.hostId,
        status: 'active',
        relayClientUrl: `${t.config.baseUrl}/api/v0/sessions?computerId=${computer.id}`,
        relayAgentUrl: `${t.config.baseUrl}/api/v0/agent`,
        remoteUser: 'dev',
        clonedRepoDirectories: [],
        ownerPrincipalKind: 'user',
        ownerId: owner.userId,
        agentToken: expect.stringMatching(/^cpt_/),
      });
      expect(Math.abs(computer.createdAt - Date.now())).toBeLessThan(60_000);
    });

    it('GET answers every field but never the agent token', async () => {
      const created = await create(owner, localBody({ source: { kind: 'template', templateId: 'blank' } }));
      const { agentToken, ...rest } = created;
      expect(agentToken).toMatch(/^cpt_/);
      const fetched = await get(owner, created.id);
      expect(fetched).toEqual(rest);
      expect(JSON.stringify(fetched)).not.toContain(agentToken);
      expect(JSON.stringify(await list(owner))).not.toContain(agentToken);
    });

    it('the list is {computers} newest first, in the list shape', async () => {
      const org = await createOrganization(t);
      const admin = await createUser(t, Role.Owner, org);
      expect(await list(admin)).toEqual([]);
      const first = await create(admin, byomBody({ name: 'first' }));
      const second = await create(admin, localBody({ name: 'second' }));
      const third = await create(admin, byomBody({ name: 'third' }));
      const res = await http().get(COMPUTERS).set(admin.auth).expect(200);
      expect(Object.keys(res.body)).toEqual(['computers']);
      const computers = res.body.computers as Json[];
      expect(computers.map((c) => c.id)).toEqual([third.id, second.id, first.id]);
      for (const computer of computers) {
        expectValid(validateComputer, computer);
        for (const field of [...CREATE_ONLY, 'hostname']) expect(computer).not.toHaveProperty(field);
      }
      const listedSecond = computers[1];
      expect(listedSecond).toMatchObject({ name: 'second', providerType: 'local', status: 'provisioning', remoteUser: userInfo().username });
      // Steps in the list shape carry no installSessionId.
      expect(listedSecond.provisioningSteps).toEqual([{ id: 'create-computer', name: expect.any(String), status: 'pending' }]);
    });

    it('the update response is the list shape; hostname appears once the agent connects', async () => {
      const created = await create(owner, byomBody());
      const renamed = await http().patch(`${COMPUTERS}/${created.id}`).set(owner.auth).send({ name: 'renamed' });
      expectStatus(renamed, 200);
      expectValid(validateComputer, renamed.body);
      expect(renamed.body).toMatchObject({ id: created.id, name: 'renamed', providerType: 'byom', status: 'active', remoteUser: 'dev' });
      for (const field of [...CREATE_ONLY, 'hostname']) expect(renamed.body).not.toHaveProperty(field);

      const connect = await http().post('/api/v0/agent/connect').set({ Authorization: `Bearer ${created.agentToken}` }).send({ hostname: 'build-box-1' });
      expectStatus(connect, 200);

      const again = await http().patch(`${COMPUTERS}/${created.id}`).set(owner.auth).send({ remoteUser: 'ops' });
      expectStatus(again, 200);
      expectValid(validateComputer, again.body);
      expect(again.body).toMatchObject({ name: 'renamed', remoteUser: 'ops', hostname: 'build-box-1' });
      for (const field of CREATE_ONLY) expect(again.body).not.toHaveProperty(field);
      expect((await list(owner)).find((c) => c.id === created.id)).toMatchObject({ hostname: 'build-box-1' });
      expect(await get(owner, created.id)).toMatchObject({ hostname: 'build-box-1', hostId: created.hostId, ownerId: owner.userId });
    });

    it('the agent token is no API key: 403 on the computers routes', async () => {
      const created = await create(owner, byomBody());
      const res = await http().get(COMPUTERS).set({ Authorization: `Bearer ${created.agentToken}` });
      expectV0Error(res, 403, 'computer_token_not_accepted');
    });
  });

  // --- update ----------------------------------------------------------------------------------

  describe('update', () => {
    let computer: Json;
    beforeAll(async () => {
      computer = await create(owner, byomBody({ name: 'to-update', remoteUser: 'keeper' }));
    });
    const patch = (body: unknown, id = computer.id as string, user = owner) => http().patch(`${COMPUTERS}/${id}`).set(user.auth).send(body as object);

    it('an empty body: 400', async () => {
      expectV0Error(await patch({}), 400, 'validation_failed');
    });

    it('no body at all: 400', async () => {
      const res = await http().patch(`${COMPUTERS}/${computer.id}`).set(owner.auth);
      expectStatus(res, 400);
    });

    it.each([
      ['an unknown field', { name: 'x', color: 'red' }, 'color'],
      ['a field only create takes', { provider: 'local' }, 'provider'],
      ['hostId', { hostId: randomUUID() }, 'hostId'],
      ['repos', { repos: [] }, 'repos'],
      ['a null name', { name: null }, 'name'],
      ['a numeric name', { name: 5 }, 'name'],
      ['a blank name', { name: '  ' }, 'name'],
      ['a name with a newline', { name: 'a\nb' }, 'name'],
      ['a name with NUL', { name: 'a\u0000b' }, 'name'],
      ['a remoteUser that is no user name', { remoteUser: '-rf' }, 'remoteUser'],
      ['a null remoteUser', { remoteUser: null }, 'remoteUser'],
    ])('%s: 400 naming it', async (_, body, field) => {
      expectInvalid(await patch(body), field);
      expect(await get(owner, computer.id)).toMatchObject({ name: 'to-update', remoteUser: 'keeper' });
    });

    it('changing only the name keeps remoteUser, and only remoteUser keeps the name', async () => {
      const c = await create(owner, byomBody({ name: 'both', remoteUser: 'first' }));
      expect((await patch({ name: 'renamed' }, c.id)).body).toMatchObject({ name: 'renamed', remoteUser: 'first' });
      expect((await patch({ remoteUser: 'second' }, c.id)).body).toMatchObject({ name: 'renamed', remoteUser: 'second' });
      expect((await patch({ name: 'both-again', remoteUser: 'third' }, c.id)).body).toMatchObject({ name: 'both-again', remoteUser: 'third' });
      expect(await get(owner, c.id)).toMatchObject({ name: 'both-again', remoteUser: 'third' });
    });

    it('another organization\'s computer: 404 computer_not_found, unchanged', async () => {
      const theirs = await create(outsider, byomBody({ name: 'theirs' }));
      expectV0Error(await patch({ name: 'mine now' }, theirs.id), 404, 'computer_not_found');
      expect((await get(outsider, theirs.id)).name).toBe('theirs');
    });

    it.each([['not-a-uuid'], ['0b9a4c1e3f554d439d3a2f8a7f1f0b11'], ['%20'], [randomUUID()]])('a malformed or unknown id (%s): 404', async (id) => {
      expectV0Error(await patch({ name: 'x' }, id), 404, 'computer_not_found');
    });

    it('a bad body is 400 before the id is looked up', async () => {
      expectV0Error(await patch({}, randomUUID()), 400, 'validation_failed');
    });
  });

  describe('malformed or unknown ids', () => {
    it.each([['not-a-uuid'], ['1'], [randomUUID()]])('every route answers 404 computer_not_found for %s', async (id) => {
      for (const [label, send] of routesOn(id)) {
        const res = await send().set(owner.auth);
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 404, code: 'computer_not_found' });
      }
    });
  });

  // --- roles -----------------------------------------------------------------------------------

  describe('roles', () => {
    it('guests are 403 insufficient_role on every route, list included', async () => {
      const computer = await create(owner, byomBody());
      const requests = [
        ['GET list', () => http().get(COMPUTERS)],
        ['POST create', () => http().post(COMPUTERS).send(byomBody())],
        ['POST create (invalid body)', () => http().post(COMPUTERS).send({})],
        ...routesOn(computer.id),
        ['GET unknown id', () => http().get(`${COMPUTERS}/${randomUUID()}`)],
      ] as const;
      for (const [label, send] of requests) {
        const res = await send().set(guest.auth);
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 403, code: 'insufficient_role' });
        expectV0Error(res, 403, 'insufficient_role');
      }
      expect((await get(owner, computer.id)).name).toBe('laptop');
    });

    it('a member cannot see or change another member\'s computer: 404 on every route, absent from their list', async () => {
      const theirs = await create(member2, byomBody({ name: 'member2s' }));
      for (const [label, send] of routesOn(theirs.id)) {
        const res = await send().set(member.auth);
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 404, code: 'computer_not_found' });
      }
      expect((await list(member)).map((c) => c.id)).not.toContain(theirs.id);
      // Still there, unchanged, for its owner.
      expect(await get(member2, theirs.id)).toMatchObject({ name: 'member2s' });
    });

    it('a member sees and changes their own computers only', async () => {
      const org = await createOrganization(t);
      const [admin, a, b] = await Promise.all([createUser(t, Role.Owner, org), createUser(t, Role.Member, org), createUser(t, Role.Member, org)]);
      const adminsOwn = await create(admin, byomBody());
      const mine = await create(a, byomBody({ name: 'mine' }));
      const theirs = await create(b, localBody({ name: 'theirs' }));
      expect((await list(a)).map((c) => c.id)).toEqual([mine.id]);
      expect((await list(b)).map((c) => c.id)).toEqual([theirs.id]);
      expect((await http().patch(`${COMPUTERS}/${mine.id}`).set(a.auth).send({ name: 'mine2' })).status).toBe(200);
      expect((await http().post(`${COMPUTERS}/${mine.id}/agent-token`).set(a.auth)).status).toBe(200);
      expect((await http().get(`${COMPUTERS}/${adminsOwn.id}`).set(a.auth)).status).toBe(404);
      expect((await http().delete(`${COMPUTERS}/${mine.id}`).set(a.auth)).status).toBe(204);
      expect(await list(a)).toEqual([]);
    });

    it('owners and managers see and change every computer of the organization', async () => {
      const org = await createOrganization(t);
      const [own, mgr, a, b] = await Promise.all([Role.Owner, Role.Manager, Role.Member, Role.Member].map((role) => createUser(t, role, org)));
      const computers = [await create(a, byomBody()), await create(b, localBody()), await create(own, byomBody()), await create(mgr, byomBody())];
      const ids = computers.map((c) => c.id).reverse();
      for (const admin of [own, mgr]) {
        expect((await list(admin)).map((c) => c.id)).toEqual(ids);
        expect((await get(admin, computers[0].id)).ownerId).toBe(a.userId);
      }
      expect((await http().patch(`${COMPUTERS}/${computers[0].id}`).set(mgr.auth).send({ name: 'by manager' })).status).toBe(200);
      expect((await http().post(`${COMPUTERS}/${computers[1].id}/agent-token`).set(own.auth)).status).toBe(200);
      expect((await http().delete(`${COMPUTERS}/${computers[1].id}`).set(mgr.auth)).status).toBe(204);
      expect((await get(a, computers[0].id)).name).toBe('by manager');
      expect(await list(b)).toEqual([]);
    });

    it('another organization\'s computer is 404 on every route, even to an owner, and absent from the list', async () => {
      const theirs = await create(outsider, byomBody({ name: 'outsiders' }));
      for (const [label, send] of routesOn(theirs.id)) {
        const res = await send().set(owner.auth);
        expect({ label, status: res.status, code: res.body.metadata?.code }).toEqual({ label, status: 404, code: 'computer_not_found' });
        expect(JSON.stringify(res.body)).not.toContain(outsider.userId);
      }
      expect((await list(owner)).map((c) => c.id)).not.toContain(theirs.id);
      expect(await get(outsider, theirs.id)).toMatchObject({ name: 'outsiders' });
    });

    describe('serviceAccountId', () => {
      it('from a member: 403 read_only_role', async () => {
        expectV0Error(await post(member, byomBody({ serviceAccountId: bot.userId })), 403, 'read_only_role');
        expectV0Error(await post(member, byomBody({ serviceAccountId: member.userId })), 403, 'read_only_role');
      });

      it.each([
        ['an owner', () => owner],
        ['a manager', () => manager],
      ])('from %s with a service account of the organization: 201, owned by that service account', async (_, who) => {
        const computer = await create(who(), localBody({ serviceAccountId: bot.userId.toUpperCase() }));
        expect(computer).toMatchObject({ ownerPrincipalKind: 'service_account', ownerId: bot.userId });
        expect(await get(owner, computer.id)).toMatchObject({ ownerPrincipalKind: 'service_account', ownerId: bot.userId });
        // It belongs to the service account: the service account's own key sees it.
        expect((await list(bot)).map((c) => c.id)).toContain(computer.id);
      });

      it.each([
        ['an unknown UUID', () => randomUUID()],
        ['a person of the organization (a member)', () => member2.userId],
        ['a person of the organization (the caller)', () => owner.userId],
        ['a person of the organization (a manager)', () => manager.userId],
        ['a user of another organization', () => outsider.userId],
        ['a service account of another organization', () => outsiderBot.userId],
        ['a malformed id', () => 'not-a-uuid'],
      ])('%s: 404 service_account_not_found, nothing created', async (_, id) => {
        const before = (await list(owner)).length;
        const res = await post(owner, byomBody({ serviceAccountId: id() }));
        expectV0Error(res, 404, 'service_account_not_found');
        expect(res.body.metadata.field).toBe('serviceAccountId');
        expect((await list(owner)).length).toBe(before);
      });
    });
  });

  // --- retry -----------------------------------------------------------------------------------

  describe('retry', () => {
    it('an active computer: 409 computer_not_failed with its status', async () => {
      const computer = await create(owner, byomBody());
      const res = await http().post(`${COMPUTERS}/${computer.id}/retry`).set(owner.auth);
      expectV0Error(res, 409, 'computer_not_failed');
      expect(res.body.metadata.computerStatus).toBe('active');
    });

    it('a provisioning computer: 409 computer_not_failed with its status', async () => {
      const computer = await create(member, localBody());
      const res = await http().post(`${COMPUTERS}/${computer.id}/retry`).set(member.auth);
      expectV0Error(res, 409, 'computer_not_failed');
      expect(res.body.metadata.computerStatus).toBe('provisioning');
      expect((await get(member, computer.id)).status).toBe('provisioning');
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

  // --- an app without LOCAL_REPOS_DIR ------------------------------------------------------------

  describe('with no LOCAL_REPOS_DIR configured', () => {
    let bare: TestApp;
    let admin: TestUser;

    beforeAll(async () => {
      bare = await startTestApp({ ...ROOMY_QUOTAS, PROVISIONING_CONCURRENCY: '0' });
      admin = await createUser(bare, Role.Owner);
    });

    afterAll(() => bare.close());

    it.each([
      ['a path under the first app\'s LOCAL_REPOS_DIR', () => join(root, 'accepted')],
      ['its file URL', () => pathToFileURL(join(root, 'accepted')).href],
      ['/tmp', () => '/tmp'],
      ['/', () => '/'],
      ['file:///etc/passwd', () => 'file:///etc/passwd'],
      ['file:/etc/passwd', () => 'file:/etc/passwd'],
      ['file://localhost/etc', () => 'file://localhost/etc'],
    ])('%s: 400 mentioning LOCAL_REPOS_DIR', async (_, repo) => {
      const res = await bare.http().post(COMPUTERS).set(admin.auth).send(localBody({ repos: [repo()] }));
      expectInvalid(res, 'repos[0]');
      expect(messageFor(res, 'repos[0]')).toContain('LOCAL_REPOS_DIR');
    });

    it('remote repos are still accepted', async () => {
      const res = await bare.http().post(COMPUTERS).set(admin.auth).send(localBody({ repos: ['https://example.com/x.git', 'git@example.com:org/x.git'] }));
      expectStatus(res, 201);
    });
  });
});
