import { randomUUID } from 'node:crypto';
import Ajv, { ValidateFunction } from 'ajv';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Principal, Role } from '../../src/modules/auth';
import { SessionsService } from '../../src/modules/sessions/sessions.service';
import { encodeCursor } from '../../src/platform/http/cursor';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectInvalid, expectStatus, expectV0Error } from '../utils/v0-errors';
import { startTestApp, TestApp } from '../utils/test-app';

/** The public v0 sessions API over real HTTP, against the real application and database. */

interface SessionView {
  sessionId: string;
  status: 'idle' | 'pending' | 'running';
  messageCount: number;
  createdAt: number;
  updatedAt: number;
  title?: string;
  completedAt?: number;
  computerId?: string;
  sessionSettings?: Record<string, unknown>;
}

interface MessageView {
  id: string;
  role: string;
  content: Array<Record<string, unknown>>;
  createdAt: number;
  updatedAt: number;
  parentId?: string;
  userMessageSource?: string;
  [field: string]: unknown;
}

interface Pagination {
  hasMore: boolean;
  nextCursor: string | null;
}

type Org = { id: string; slug: string };
type Json = Record<string, unknown>;

// Real, tiny files.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
const JPEG = Buffer.from([
  0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xd9,
]).toString('base64');
const GIF = 'R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7';
const WEBP = 'UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==';
const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [] /Count 0>> endobj\n' +
    'trailer <</Root 1 0 R>>\n%%EOF\n',
).toString('base64');
const NOT_A_PDF = Buffer.from('just some plain text, not a PDF at all').toString('base64');

const image = (data: string, mediaType: string) => ({ type: 'base64', data, mediaType });
const pdf = (extra: Json = {}) => ({ type: 'base64', mediaType: 'application/pdf', data: PDF, ...extra });
const textFile = (data: string, extra: Json = {}) => ({ type: 'text', mediaType: 'text/plain', data, ...extra });

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('Sessions API (v0)', () => {
  let t: TestApp;
  let validateSession: ValidateFunction;
  let validateMessage: ValidateFunction;
  let validateSessionPage: ValidateFunction;
  let validateMessagePage: ValidateFunction;

  let orgA: Org;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let member2: TestUser;
  let guest: TestUser;
  let outsider: TestUser; // owner of another organization

  beforeAll(async () => {
    t = await startTestApp();
    const doc = (await t.http().get('/docs-json')).body as Json;
    // The app's own published schemas, as a client would use them.
    const ajv = new Ajv({ strict: false, discriminator: true });
    ajv.addSchema({ ...doc, $id: 'openapi' });
    const schema = (pointer: string) => ajv.compile({ $ref: `openapi#${pointer}` });
    validateSession = schema('/components/schemas/Session');
    validateMessage = schema('/components/schemas/Message');
    validateSessionPage = schema('/paths/~1api~1v0~1sessions/get/responses/200/content/application~1json/schema');
    validateMessagePage = schema('/paths/~1api~1v0~1sessions~1{sessionId}~1messages/get/responses/200/content/application~1json/schema');

    orgA = await createOrganization(t, { messageHistory: true });
    owner = await createUser(t, Role.Owner, orgA);
    manager = await createUser(t, Role.Manager, orgA);
    member = await createUser(t, Role.Member, orgA);
    member2 = await createUser(t, Role.Member, orgA);
    guest = await createUser(t, Role.Guest, orgA);
    outsider = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
  });

  afterAll(() => t.close());

  // --- helpers -------------------------------------------------------------------------------

  const http = () => t.http();
  const path = (id = '', rest = '') => `/api/v0/sessions${id ? `/${id}` : ''}${rest}`;

  function expectValid(validate: ValidateFunction, value: unknown) {
    validate(value);
    expect(validate.errors ?? []).toEqual([]);
  }

  async function ownerOfNewOrg(): Promise<TestUser> {
    return createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
  }

  async function createSession(user: TestUser, body: Json = {}): Promise<SessionView> {
    const res = await http().post(path()).set(user.auth).send(body);
    expectStatus(res, 201);
    return res.body as SessionView;
  }

  /** A session owned by a guest: guests cannot create one over HTTP, so it is made in-process. */
  async function guestSession(user: TestUser, title: string): Promise<SessionView> {
    const principal: Principal = {
      userId: user.userId,
      organizationId: user.organizationId,
      role: user.role,
      email: 'guest@example.test',
      name: 'A guest',
      credential: { kind: 'api_key', apiKeyId: user.apiKeyId },
      features: {},
    };
    return (await t.app.get(SessionsService).create(principal, { title })).body as SessionView;
  }

  const getSession = (user: TestUser, id: string, query = '') => http().get(path(id, query ? `?${query}` : '')).set(user.auth);
  const listSessions = (user: TestUser, query = '') => http().get(`${path()}${query ? `?${query}` : ''}`).set(user.auth);
  const postMessage = (user: TestUser, id: string, body: unknown) => http().post(path(id, '/messages')).set(user.auth).send(body as object);
  const getMessages = (user: TestUser, id: string, query = '') => http().get(path(id, `/messages${query ? `?${query}` : ''}`)).set(user.auth);

  async function addMessage(user: TestUser, id: string, body: Json = { text: 'hello' }): Promise<{ messageId: string; status: string }> {
    const res = await postMessage(user, id, body);
    expectStatus(res, 200);
    return res.body as { messageId: string; status: string };
  }

  async function readSession(user: TestUser, id: string): Promise<SessionView> {
    const res = await getSession(user, id);
    expectStatus(res, 200);
    return res.body as SessionView;
  }

  async function allMessages(user: TestUser, id: string, query = ''): Promise<MessageView[]> {
    const res = await getMessages(user, id, `limit=100${query ? `&${query}` : ''}`);
    expectStatus(res, 200);
    return res.body.messages as MessageView[];
  }

  /** Walks a paged list to its end, running `between` after each page. */
  async function walk<T>(fetch: (cursor: string | null) => Promise<Response>, key: string, between?: () => Promise<unknown>): Promise<T[][]> {
    const pages: T[][] = [];
    let cursor: string | null = null;
    for (let guard = 0; guard < 50; guard++) {
      const res = await fetch(cursor);
      expectStatus(res, 200);
      expect(Object.keys(res.body).sort()).toEqual([key, 'pagination'].sort());
      const pagination = res.body.pagination as Pagination;
      expect(Object.keys(pagination).sort()).toEqual(['hasMore', 'nextCursor']);
      pages.push(res.body[key] as T[]);
      if (!pagination.hasMore) {
        expect(pagination.nextCursor).toBeNull();
        return pages;
      }
      expect(pagination.nextCursor).toEqual(expect.any(String));
      cursor = pagination.nextCursor;
      if (between) await between();
    }
    throw new Error('the walk never reached a last page');
  }

  /** Claims the organization's oldest waiting work through the agent channel. */
  async function claim(user: TestUser): Promise<{ turnId: string; sessionId: string }> {
    const res = await http().post('/api/v0/agent/claims').set(user.auth).send({});
    expectStatus(res, 200);
    expect(res.body.work).not.toBeNull();
    return res.body.work as { turnId: string; sessionId: string };
  }

  function expectParentChain(messages: MessageView[]) {
    messages.forEach((message, i) => {
      if (i === 0) expect(message).not.toHaveProperty('parentId');
      else expect(message.parentId).toBe(messages[i - 1].id);
    });
  }

  // --- shapes --------------------------------------------------------------------------------

  describe('shapes', () => {
    it('a new session is idle and empty, with integer Unix-ms times and no unset optional field (not even null)', async () => {
      const before = Date.now();
      const res = await http().post(path()).set(owner.auth).send({});
      const after = Date.now();
      expectStatus(res, 201);
      const session = res.body as SessionView;
      expect(Object.keys(session).sort()).toEqual(['createdAt', 'messageCount', 'sessionId', 'status', 'updatedAt']);
      expect(session).toEqual({ sessionId: expect.stringMatching(UUID_V7), status: 'idle', messageCount: 0, createdAt: expect.any(Number), updatedAt: expect.any(Number) });
      expect(Number.isInteger(session.createdAt)).toBe(true);
      expect(Number.isInteger(session.updatedAt)).toBe(true);
      expect(session.createdAt).toBeGreaterThanOrEqual(before);
      expect(session.createdAt).toBeLessThanOrEqual(after);
      expect(session.updatedAt).toBe(session.createdAt);
      expectValid(validateSession, session);
      // The published schema is closed: it is no rubber stamp.
      expect(validateSession({ ...session, extra: 1 })).toBe(false);
      expect(validateSession({ ...session, title: null })).toBe(false);
      // Read back: the very same object.
      expect(await readSession(owner, session.sessionId)).toEqual(session);
    });

    it('title and sessionSettings come back exactly as given, and the list shows the same object', async () => {
      const sessionSettings = {
        model: 'model-x',
        reasoningEffort: 'none',
        interactionMode: 'auto',
        autonomyLevel: 'off',
        autonomyMode: 'normal',
        specModeModel: 'model-y',
        specModeReasoningEffort: 'high',
        providerLock: 'custom',
        providerLockTimestamp: '2026-01-20T10:00:00.000Z',
        apiProviderLock: 'messages',
        archivedAt: '2026-01-21T10:00:00.000Z',
        tags: [{ name: 'urgent', metadata: { color: 'red', nested: { n: 1 } } }],
        enabledToolIds: ['read', 'write'],
        disabledToolIds: [],
      };
      const session = await createSession(owner, { title: 'Fix the build', sessionSettings });
      expect(Object.keys(session).sort()).toEqual(['createdAt', 'messageCount', 'sessionId', 'sessionSettings', 'status', 'title', 'updatedAt']);
      expect(session.title).toBe('Fix the build');
      expect(session.sessionSettings).toEqual(sessionSettings);
      expectValid(validateSession, session);
      expect(await readSession(owner, session.sessionId)).toEqual(session);
      const listed = await listSessions(owner, 'limit=100');
      expectStatus(listed, 200);
      expectValid(validateSessionPage, listed.body);
      expect((listed.body.sessions as SessionView[]).find((s) => s.sessionId === session.sessionId)).toEqual(session);
    });

    it('add-message answers exactly {messageId, status} (and warnings: no agent polls here); the stored message has exactly the Message fields', async () => {
      const session = await createSession(owner);
      const before = Date.now();
      const res = await postMessage(owner, session.sessionId, { text: 'first' });
      const after = Date.now();
      expectStatus(res, 200);
      expect(res.body).toEqual({ messageId: expect.stringMatching(UUID_V7), status: 'pending', warnings: [{ code: 'no_agent_for_organization', message: expect.any(String) }] });
      await addMessage(owner, session.sessionId, { text: 'second' });

      const page = await getMessages(owner, session.sessionId);
      expectStatus(page, 200);
      expectValid(validateMessagePage, page.body);
      expect(page.body.pagination).toEqual({ hasMore: false, nextCursor: null });
      const [first, second] = page.body.messages as MessageView[];
      expect(Object.keys(first).sort()).toEqual(['content', 'createdAt', 'id', 'role', 'updatedAt', 'userMessageSource']);
      expect(Object.keys(second).sort()).toEqual(['content', 'createdAt', 'id', 'parentId', 'role', 'updatedAt', 'userMessageSource']);
      expect(first).toEqual({
        id: res.body.messageId,
        role: 'user',
        content: [{ type: 'text', text: 'first' }],
        createdAt: expect.any(Number),
        updatedAt: expect.any(Number),
        userMessageSource: 'sessions_api',
      });
      expect(Number.isInteger(first.createdAt)).toBe(true);
      expect(first.createdAt).toBeGreaterThanOrEqual(before);
      expect(first.createdAt).toBeLessThanOrEqual(after);
      expect(first.updatedAt).toBe(first.createdAt);
      for (const message of [first, second]) expectValid(validateMessage, message);
      expect(validateMessage({ ...first, sessionId: session.sessionId })).toBe(false);
      expect(validateMessage({ ...first, content: [{ type: 'text', text: 'x', extra: true }] })).toBe(false);

      const read = await readSession(owner, session.sessionId);
      expect(read).toMatchObject({ status: 'pending', messageCount: 2 });
      expect(read.updatedAt).toBeGreaterThanOrEqual(first.createdAt);
      expect(read.createdAt).toBe(session.createdAt);
      expectValid(validateSession, read);
    });
  });

  // --- status --------------------------------------------------------------------------------

  describe('status', () => {
    it('idle, then pending on a user message; running once an agent claims it; a message while running answers running', async () => {
      const boss = await ownerOfNewOrg();
      const session = await createSession(boss);
      expect(session.status).toBe('idle');
      expect((await addMessage(boss, session.sessionId, { text: 'one' })).status).toBe('pending');
      expect((await readSession(boss, session.sessionId)).status).toBe('pending');
      expect((await addMessage(boss, session.sessionId, { text: 'two' })).status).toBe('pending');

      const work = await claim(boss);
      expect(work.sessionId).toBe(session.sessionId);
      const running = await readSession(boss, session.sessionId);
      expect(running).toMatchObject({ status: 'running', messageCount: 2 });
      expect(running).not.toHaveProperty('completedAt');
      expectValid(validateSession, running);

      expect((await addMessage(boss, session.sessionId, { text: 'three' })).status).toBe('running');
      expect((await readSession(boss, session.sessionId)).status).toBe('running');

      // The turn ends with a message it never took: pending again, not completed.
      const ended = await http().post(`/api/v0/agent/sessions/${session.sessionId}/end-turn`).set(boss.auth).send({ turnId: work.turnId });
      expectStatus(ended, 200);
      const pending = await readSession(boss, session.sessionId);
      expect(pending.status).toBe('pending');
      expect(pending).not.toHaveProperty('completedAt');

      // The next turn ends with nothing left: idle, completedAt set (integer Unix ms).
      const next = await claim(boss);
      const before = Date.now();
      expectStatus(await http().post(`/api/v0/agent/sessions/${session.sessionId}/end-turn`).set(boss.auth).send({ turnId: next.turnId, assistantActiveTimeMs: 1500 }), 200);
      const idle = await readSession(boss, session.sessionId);
      expect(idle.status).toBe('idle');
      expect(Number.isInteger(idle.completedAt)).toBe(true);
      expect(idle.completedAt).toBeGreaterThanOrEqual(before - 5);
      expect(idle.completedAt).toBeLessThanOrEqual(Date.now());
      expect(idle.sessionSettings).toEqual({ assistantActiveTimeMs: 1500 });
      expectValid(validateSession, idle);

      // A server-maintained setting survives a client's settings change.
      const patched = await http().patch(path(idle.sessionId)).set(boss.auth).send({ sessionSettings: { model: 'm' } });
      expectStatus(patched, 200);
      expect(patched.body.sessionSettings).toEqual({ assistantActiveTimeMs: 1500, model: 'm' });
      expect((await addMessage(boss, session.sessionId, { text: 'four' })).status).toBe('pending');
    });
  });

  // --- add-message content -------------------------------------------------------------------

  describe('add-message content', () => {
    it('stores the text, then the images, then the files, as content blocks in that order', async () => {
      const session = await createSession(member);
      const images = [image(PNG, 'image/png'), image(JPEG, 'image/jpeg'), image(GIF, 'image/gif'), image(WEBP, 'image/webp')];
      const files = [
        pdf({ name: 'spec.pdf', path: 'docs/spec.pdf', parsedData: 'extracted text' }),
        textFile('# Notes\nline two\n', { name: 'notes.md', mime: 'text/markdown' }),
        pdf(),
        textFile('{"a": 1}'),
      ];
      const { messageId } = await addMessage(member, session.sessionId, { text: 'Look at these', images, files });
      const [message] = await allMessages(member, session.sessionId);
      expect(message.id).toBe(messageId);
      expect(message.content).toEqual([
        { type: 'text', text: 'Look at these' },
        ...images.map((source) => ({ type: 'image', source })),
        ...files.map((source) => ({ type: 'document', source })),
      ]);
      expect(message.userMessageSource).toBe('sessions_api');
      expect(message.role).toBe('user');
      expectValid(validateMessage, message);
      expect((await readSession(member, session.sessionId)).messageCount).toBe(1);
    });

    it('each message’s parentId is the previous message, and messageCount counts exactly', async () => {
      const session = await createSession(owner);
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        ids.push((await addMessage(owner, session.sessionId, { text: `message ${i}`, ...(i === 2 ? { images: [image(PNG, 'image/png')] } : {}) })).messageId);
        expect((await readSession(owner, session.sessionId)).messageCount).toBe(i + 1);
      }
      const messages = await allMessages(owner, session.sessionId);
      expect(messages.map((m) => m.id)).toEqual(ids);
      expectParentChain(messages);
      expect(messages.map((m) => (m.content[0] as { text: string }).text)).toEqual(['message 0', 'message 1', 'message 2', 'message 3']);
    });

    it('text comes back byte for byte: Unicode, newlines, surrounding spaces', async () => {
      const session = await createSession(owner);
      const text = '  Ünïcödé ✓ 日本語 עברית 🚀👩‍💻\n\ttabbed\r\nCRLF "quotes" \\ backslash <b>html</b>  ';
      await addMessage(owner, session.sessionId, { text });
      const [message] = await allMessages(owner, session.sessionId);
      expect(message.content).toEqual([{ type: 'text', text }]);
    });

    it('text of 200,000 characters is accepted; one more answers 400 naming text', async () => {
      const session = await createSession(owner);
      await addMessage(owner, session.sessionId, { text: 'a'.repeat(200_000) });
      expectInvalid(await postMessage(owner, session.sessionId, { text: 'a'.repeat(200_001) }), 'text');
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
    });

    it('20 images are accepted; 21 answer 400 naming images', async () => {
      const session = await createSession(owner);
      await addMessage(owner, session.sessionId, { text: 'many', images: Array.from({ length: 20 }, () => image(PNG, 'image/png')) });
      expectInvalid(await postMessage(owner, session.sessionId, { text: 'too many', images: Array.from({ length: 21 }, () => image(PNG, 'image/png')) }), 'images');
    });

    // PostgreSQL refuses NUL in text and jsonb, and lone surrogates in jsonb: such input must be
    // stored and read back intact, or refused with a 400 naming the field; never a 500.
    it.each<[string, 'create' | 'message', Json, string, (read: { session: SessionView; messages: MessageView[] }) => unknown, unknown]>([
      ['message text with a NUL character', 'message', { text: 'before\u0000after' }, 'text', (r) => r.messages[0]?.content, [{ type: 'text', text: 'before\u0000after' }]],
      ['message text with a lone surrogate', 'message', { text: 'before\ud800after' }, 'text', (r) => r.messages[0]?.content, [{ type: 'text', text: 'before\ud800after' }]],
      [
        'a text file with a NUL character',
        'message',
        { text: 'file', files: [textFile('nul\u0000inside')] },
        'files[0].data',
        (r) => r.messages[0]?.content,
        [{ type: 'text', text: 'file' }, { type: 'document', source: textFile('nul\u0000inside') }],
      ],
      ['a title with a NUL character', 'create', { title: 'bad\u0000title' }, 'title', (r) => r.session.title, 'bad\u0000title'],
      ['a title with a lone surrogate', 'create', { title: 'bad\ud800title' }, 'title', (r) => r.session.title, 'bad\ud800title'],
      ['a setting with a NUL character', 'create', { sessionSettings: { model: 'model\u0000x' } }, 'sessionSettings.model', (r) => r.session.sessionSettings, { model: 'model\u0000x' }],
    ])('%s is stored and read back intact, or refused with 400 naming the field; never a 500', async (_, endpoint, body, field, pick, expected) => {
      const target = await createSession(owner);
      const res = endpoint === 'create' ? await http().post(path()).set(owner.auth).send(body) : await postMessage(owner, target.sessionId, body);
      if (res.status === 400) {
        expectInvalid(res, field);
        return;
      }
      expectStatus(res, endpoint === 'create' ? 201 : 200);
      const id = endpoint === 'create' ? (res.body as SessionView).sessionId : target.sessionId;
      const session = await readSession(owner, id);
      if (endpoint === 'create') expect(pick({ session: res.body as SessionView, messages: [] })).toEqual(expected);
      expect(pick({ session, messages: endpoint === 'message' ? await allMessages(owner, id) : [] })).toEqual(expected);
    });
  });

  // --- bad input -----------------------------------------------------------------------------

  describe('bad input', () => {
    let session: SessionView;
    let otherSession: SessionView;

    beforeAll(async () => {
      session = await createSession(owner, { title: 'target' });
      otherSession = await createSession(owner, { title: 'other' });
      for (let i = 0; i < 3; i++) {
        await addMessage(owner, session.sessionId, { text: `m${i}` });
        await addMessage(owner, otherSession.sessionId, { text: `o${i}` });
      }
    });

    afterAll(async () => {
      // Nothing refused left a trace.
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(3);
    });

    describe('POST /api/v0/sessions/{id}/messages body', () => {
      it.each<[string, unknown, string]>([
        ['text of the wrong type', { text: 42 }, 'text'],
        ['text null', { text: null }, 'text'],
        ['text missing', { images: [image(PNG, 'image/png')] }, 'text'],
        ['an empty body object', {}, 'text'],
        ['empty text', { text: '' }, 'text'],
        ['blank text', { text: ' \n\t ' }, 'text'],
        ['an unknown top-level property', { text: 'hi', role: 'assistant' }, 'role'],
        ['images not an array', { text: 'hi', images: image(PNG, 'image/png') }, 'images'],
        ['an image that is a string', { text: 'hi', images: [PNG] }, 'images[0]'],
        ['an unknown property in images[i]', { text: 'hi', images: [image(PNG, 'image/png'), { ...image(PNG, 'image/png'), name: 'x.png' }] }, 'images[1].name'],
        ['an image without data', { text: 'hi', images: [{ type: 'base64', mediaType: 'image/png' }] }, 'images[0].data'],
        ['an image with empty data', { text: 'hi', images: [image('', 'image/png')] }, 'images[0].data'],
        ['an image of type url', { text: 'hi', images: [{ type: 'url', data: PNG, mediaType: 'image/png' }] }, 'images[0].type'],
        ['an image mediaType not allowed', { text: 'hi', images: [image(PNG, 'image/bmp')] }, 'images[0].mediaType'],
        ['an image mediaType missing', { text: 'hi', images: [{ type: 'base64', data: PNG }] }, 'images[0].mediaType'],
        ['image data that is not base64', { text: 'hi', images: [image('not base64!!', 'image/png')] }, 'images[0].data'],
        ['image data unpadded', { text: 'hi', images: [image(PNG.replace(/=+$/, ''), 'image/png')] }, 'images[0].data'],
        ['image data in base64url', { text: 'hi', images: [image(Buffer.from(PNG, 'base64').toString('base64url'), 'image/png')] }, 'images[0].data'],
        ['image data with a line break', { text: 'hi', images: [image(`${PNG.slice(0, 20)}\n${PNG.slice(20)}`, 'image/png')] }, 'images[0].data'],
        ['PNG bytes declared image/jpeg', { text: 'hi', images: [image(PNG, 'image/jpeg')] }, 'images[0].data'],
        ['JPEG bytes declared image/png', { text: 'hi', images: [image(JPEG, 'image/png')] }, 'images[0].data'],
        ['PDF bytes declared image/gif', { text: 'hi', images: [image(PDF, 'image/gif')] }, 'images[0].data'],
        ['PNG bytes declared image/webp', { text: 'hi', images: [image(PNG, 'image/webp')] }, 'images[0].data'],
        ['files not an array', { text: 'hi', files: pdf() }, 'files'],
        ['a file of unknown type', { text: 'hi', files: [{ type: 'url', mediaType: 'application/pdf', data: 'https://example.test/a.pdf' }] }, 'files[0].type'],
        ['a file without type', { text: 'hi', files: [{ mediaType: 'application/pdf', data: PDF }] }, 'files[0].type'],
        ['an unknown property in a PDF file', { text: 'hi', files: [pdf({ size: 10 })] }, 'files[0].size'],
        ['an unknown property in a text file', { text: 'hi', files: [textFile('x', { path: 'a.txt' })] }, 'files[0].path'],
        ['non-PDF bytes declared application/pdf', { text: 'hi', files: [pdf({ data: NOT_A_PDF })] }, 'files[0].data'],
        ['PNG bytes declared application/pdf', { text: 'hi', files: [textFile('x'), pdf({ data: PNG })] }, 'files[1].data'],
        ['PDF data that is not base64', { text: 'hi', files: [pdf({ data: '%PDF-1.4 raw' })] }, 'files[0].data'],
        ['a base64 file that is not a PDF', { text: 'hi', files: [{ type: 'base64', mediaType: 'image/png', data: PNG }] }, 'files[0].mediaType'],
        ['a text file with another mediaType', { text: 'hi', files: [textFile('x', { mediaType: 'text/markdown' })] }, 'files[0].mediaType'],
        ['a text file with empty data', { text: 'hi', files: [textFile('')] }, 'files[0].data'],
        ['a text file whose data is not a string', { text: 'hi', files: [textFile(7 as unknown as string)] }, 'files[0].data'],
        ['computerId of the wrong type', { text: 'hi', computerId: 5 }, 'computerId'],
      ])('%s answers 400 naming the field', async (_, body, field) => {
        expectInvalid(await postMessage(owner, session.sessionId, body), field);
      });

      it('the enum error lists the allowed media types', async () => {
        const res = await postMessage(owner, session.sessionId, { text: 'hi', images: [image(PNG, 'image/bmp')] });
        expect(res.body.detail).toBe('images[0].mediaType: must be one of: image/jpeg, image/png, image/gif, image/webp');
      });

      it('lists every problem in metadata.errors', async () => {
        const res = await postMessage(owner, session.sessionId, { text: '', extra: 1, images: [image(PNG, 'image/bmp')] });
        expectV0Error(res, 400, 'validation_failed');
        const fields = (res.body.metadata.errors as Array<{ field: string }>).map((e) => e.field).sort();
        expect(fields).toEqual(['extra', 'images[0].mediaType', 'text']);
      });

      it.each<[string, unknown]>([
        ['an array', [{ text: 'hi' }]],
        ['null', null],
        ['a string', 'hi'],
        ['a number', 42],
      ])('a JSON body that is %s answers 400 naming body', async (_, body) => {
        const res = await http().post(path(session.sessionId, '/messages')).set(owner.auth).set('Content-Type', 'application/json').send(JSON.stringify(body));
        expectInvalid(res, 'body');
      });

      it('a body that is not JSON answers 400 invalid_json', async () => {
        const res = await http().post(path(session.sessionId, '/messages')).set(owner.auth).set('Content-Type', 'application/json').send('{"text": "hi",');
        expectV0Error(res, 400, 'invalid_json');
      });

      it('an empty body with Content-Type application/json answers 400', async () => {
        const res = await http().post(path(session.sessionId, '/messages')).set(owner.auth).set('Content-Type', 'application/json').send('');
        expectV0Error(res, 400, 'invalid_json');
      });

      it('no body at all answers 400 naming body', async () => {
        expectInvalid(await http().post(path(session.sessionId, '/messages')).set(owner.auth), 'body');
      });

      it.each([
        ['text/plain', 'hello'],
        ['application/x-www-form-urlencoded', 'text=hello'],
        ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="text"\r\n\r\nhello\r\n--x--\r\n'],
        ['application/xml', '<text>hello</text>'],
      ])('Content-Type %s answers 415', async (type, body) => {
        const res = await http().post(path(session.sessionId, '/messages')).set(owner.auth).set('Content-Type', type).send(body);
        expectV0Error(res, 415, 'unsupported_media_type');
      });

      it('a prototype-poisoning body answers 400, not 200 or 500', async () => {
        const res = await http()
          .post(path(session.sessionId, '/messages'))
          .set(owner.auth)
          .set('Content-Type', 'application/json')
          .send('{"text": "hi", "__proto__": {"polluted": true}}');
        expectStatus(res, 400);
        expect(Object.keys(res.body).sort()).toEqual(['detail', 'metadata', 'status', 'title']);
      });
    });

    describe('POST /api/v0/sessions body', () => {
      it.each<[string, unknown, string]>([
        ['title of the wrong type', { title: 5 }, 'title'],
        ['title null', { title: null }, 'title'],
        ['an empty title', { title: '' }, 'title'],
        ['a title of 501 characters', { title: 'x'.repeat(501) }, 'title'],
        ['an unknown top-level property', { title: 'ok', status: 'running' }, 'status'],
        ['a client-chosen sessionId', { sessionId: randomUUID() }, 'sessionId'],
        ['computerId of the wrong type', { computerId: 1 }, 'computerId'],
        ['sessionSettings not an object', { sessionSettings: 'fast' }, 'sessionSettings'],
        ['an unknown setting', { sessionSettings: { turbo: true } }, 'sessionSettings.turbo'],
        ['a reasoningEffort outside its values', { sessionSettings: { reasoningEffort: 'extreme' } }, 'sessionSettings.reasoningEffort'],
        ['a model of the wrong type', { sessionSettings: { model: 3 } }, 'sessionSettings.model'],
        ['a tag without metadata', { sessionSettings: { tags: [{ name: 't' }] } }, 'sessionSettings.tags[0].metadata'],
        ['a tag with an unknown property', { sessionSettings: { tags: [{ name: 't', metadata: {}, color: 'red' }] } }, 'sessionSettings.tags[0].color'],
        ['enabledToolIds with a number', { sessionSettings: { enabledToolIds: ['a', 2] } }, 'sessionSettings.enabledToolIds[1]'],
        ['tokenUsage (kept by the server)', { sessionSettings: { tokenUsage: { inputTokens: 1, outputTokens: 1, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0 } } }, 'sessionSettings.tokenUsage'],
        ['assistantActiveTimeMs (kept by the server)', { sessionSettings: { assistantActiveTimeMs: 100 } }, 'sessionSettings.assistantActiveTimeMs'],
      ])('%s answers 400 naming the field', async (_, body, field) => {
        expectInvalid(await http().post(path()).set(owner.auth).send(body as object), field);
      });

      it('an array body answers 400 naming body', async () => {
        const res = await http().post(path()).set(owner.auth).set('Content-Type', 'application/json').send('[]');
        expectInvalid(res, 'body');
      });

      it('a body that is not JSON answers 400 invalid_json; another Content-Type 415', async () => {
        expectV0Error(await http().post(path()).set(owner.auth).set('Content-Type', 'application/json').send('{title:'), 400, 'invalid_json');
        expectV0Error(await http().post(path()).set(owner.auth).set('Content-Type', 'text/plain').send('title'), 415, 'unsupported_media_type');
      });
    });

    describe('PATCH /api/v0/sessions/{id} body', () => {
      it.each<[string, unknown, string]>([
        ['title of the wrong type', { title: 5 }, 'title'],
        ['an empty title', { title: '' }, 'title'],
        ['a title of 501 characters', { title: 'x'.repeat(501) }, 'title'],
        ['an unknown property', { status: 'idle' }, 'status'],
        ['messageCount', { messageCount: 0 }, 'messageCount'],
        ['a setting of the wrong type', { sessionSettings: { model: 5 } }, 'sessionSettings.model'],
        ['a blank title', { title: '   ' }, 'title'],
        ['an unknown setting', { sessionSettings: { turbo: true } }, 'sessionSettings.turbo'],
        ['an autonomyLevel outside its values', { sessionSettings: { autonomyLevel: 'max' } }, 'sessionSettings.autonomyLevel'],
        ['tokenUsage (kept by the server)', { sessionSettings: { tokenUsage: { inputTokens: 1, outputTokens: 1, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0 } } }, 'sessionSettings.tokenUsage'],
        ['assistantActiveTimeMs (kept by the server)', { sessionSettings: { assistantActiveTimeMs: 100 } }, 'sessionSettings.assistantActiveTimeMs'],
      ])('%s answers 400 naming the field', async (_, body, field) => {
        expectInvalid(await http().patch(path(session.sessionId)).set(owner.auth).send(body as object), field);
        expect((await readSession(owner, session.sessionId)).title).toBe('target');
      });

      it('an array body, a non-JSON body and another Content-Type are refused', async () => {
        expectInvalid(await http().patch(path(session.sessionId)).set(owner.auth).set('Content-Type', 'application/json').send('[]'), 'body');
        expectV0Error(await http().patch(path(session.sessionId)).set(owner.auth).set('Content-Type', 'application/json').send('{'), 400, 'invalid_json');
        expectV0Error(await http().patch(path(session.sessionId)).set(owner.auth).set('Content-Type', 'text/plain').send('x'), 415, 'unsupported_media_type');
      });
    });

    describe('query parameters', () => {
      const lists = () =>
        [
          ['GET /api/v0/sessions', (q: string) => listSessions(owner, q)],
          ['GET /api/v0/sessions/{id}/messages', (q: string) => getMessages(owner, session.sessionId, q)],
        ] as const;

      it.each(['0', '101', 'abc', '1.5', '-1', '', '01', '1e1'])('limit=%s answers 400 naming limit on both lists', async (limit) => {
        for (const [, list] of lists()) expectInvalid(await list(`limit=${encodeURIComponent(limit)}`), 'limit');
      });

      it('limit=1 and limit=100 are accepted on both lists', async () => {
        for (const [, list] of lists()) {
          expectStatus(await list('limit=1'), 200);
          expectStatus(await list('limit=100'), 200);
        }
      });

      it('an unknown query parameter answers 400 naming it, on every GET', async () => {
        expectInvalid(await listSessions(owner, 'offset=2'), 'offset');
        expectInvalid(await getMessages(owner, session.sessionId, 'order=desc'), 'order');
        expectInvalid(await getSession(owner, session.sessionId, 'expand=messages'), 'expand');
      });

      it.each(['system', 'bogus', 'USER', ''])('role=%s answers 400 naming role', async (role) => {
        expectInvalid(await getMessages(owner, session.sessionId, `role=${role}`), 'role');
      });

      it('a tampered, foreign or malformed cursor answers 400 invalid_cursor on both lists', async () => {
        const sessionsCursor = (await listSessions(owner, 'limit=1')).body.pagination.nextCursor as string;
        const messagesCursor = (await getMessages(owner, session.sessionId, 'limit=1')).body.pagination.nextCursor as string;
        const otherCursor = (await getMessages(owner, otherSession.sessionId, 'limit=1')).body.pagination.nextCursor as string;
        expect([sessionsCursor, messagesCursor, otherCursor].every((c) => typeof c === 'string')).toBe(true);
        const flip = (c: string) => `${c[0] === 'A' ? 'B' : 'A'}${c.slice(1)}`;
        const cases: Array<[string, (q: string) => Promise<Response>, string]> = [
          ['sessions: tampered', (q) => listSessions(owner, q), flip(sessionsCursor)],
          ['sessions: truncated', (q) => listSessions(owner, q), sessionsCursor.slice(0, -3)],
          ['sessions: garbage', (q) => listSessions(owner, q), 'garbage'],
          ['sessions: a messages cursor', (q) => listSessions(owner, q), messagesCursor],
          ['messages: tampered', (q) => getMessages(owner, session.sessionId, q), flip(messagesCursor)],
          ['messages: another session’s', (q) => getMessages(owner, session.sessionId, q), otherCursor],
          ['messages: a sessions cursor', (q) => getMessages(owner, session.sessionId, q), sessionsCursor],
          ['messages: a negative seq', (q) => getMessages(owner, session.sessionId, q), encodeCursor(`messages:${session.sessionId}`, [-1])],
          ['messages: a seq that is not an integer', (q) => getMessages(owner, session.sessionId, q), encodeCursor(`messages:${session.sessionId}`, [1.5])],
          ['messages: a huge seq', (q) => getMessages(owner, session.sessionId, q), encodeCursor(`messages:${session.sessionId}`, [2 ** 40])],
        ];
        for (const [name, list, cursor] of cases) {
          const res = await list(`cursor=${encodeURIComponent(cursor)}`);
          expect({ name, status: res.status, code: res.body?.metadata?.code }).toEqual({ name, status: 400, code: 'invalid_cursor' });
          expectV0Error(res, 400, 'invalid_cursor');
          expect(res.body.detail).toMatch(/^cursor: /);
          expect(res.body.metadata.errors).toEqual([{ field: 'cursor', message: expect.any(String) }]);
        }
        // The messages cursor still works on its own list.
        const ok = await getMessages(owner, session.sessionId, `cursor=${encodeURIComponent(messagesCursor)}`);
        expectStatus(ok, 200);
        expect((ok.body.messages as MessageView[]).map((m) => (m.content[0] as { text: string }).text)).toEqual(['m1', 'm2']);
      });
    });

    describe('computerId (no computers exist yet)', () => {
      it.each([
        ['repeated', 'computerId=a&computerId=b'],
        ['longer than 64 characters', `computerId=${'c'.repeat(65)}`],
      ])('a computerId query %s answers 400 naming computerId on every GET', async (_, q) => {
        expectInvalid(await listSessions(owner, q), 'computerId');
        expectInvalid(await getSession(owner, session.sessionId, q), 'computerId');
        expectInvalid(await getMessages(owner, session.sessionId, q), 'computerId');
      });

      it.each([randomUUID(), 'not-a-uuid'])('computerId=%s answers 404 computer_not_found on every endpoint that takes it', async (computerId) => {
        const q = `computerId=${encodeURIComponent(computerId)}`;
        const responses: Array<[string, Response]> = [
          ['list', await listSessions(owner, q)],
          ['get', await getSession(owner, session.sessionId, q)],
          ['messages', await getMessages(owner, session.sessionId, q)],
          ['add-message', await postMessage(owner, session.sessionId, { text: 'routed', computerId })],
          ['create', await http().post(path()).set(owner.auth).send({ computerId })],
        ];
        for (const [, res] of responses) expectV0Error(res, 404, 'computer_not_found');
      });
    });
  });

  // --- ordering and pagination ---------------------------------------------------------------

  describe('ordering and pagination', () => {
    it('lists sessions newest first across pages, without repeating or skipping any while new ones are created', async () => {
      const boss = await ownerOfNewOrg();
      const created: SessionView[] = [];
      for (let i = 0; i < 22; i++) created.push(await createSession(boss, { title: `s${i}` }));
      const newestFirst = created.map((s) => s.sessionId).reverse();

      // Default limit 20.
      const first = await listSessions(boss);
      expectStatus(first, 200);
      expect((first.body.sessions as SessionView[]).map((s) => s.sessionId)).toEqual(newestFirst.slice(0, 20));
      expect(first.body.pagination).toEqual({ hasMore: true, nextCursor: expect.any(String) });

      const inserted: string[] = [];
      const pages = await walk<SessionView>(
        (cursor) => listSessions(boss, `limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
        'sessions',
        async () => {
          for (let i = 0; i < 2; i++) inserted.push((await createSession(boss, { title: 'during' })).sessionId);
        },
      );
      expect(pages.map((p) => p.length)).toEqual([5, 5, 5, 5, 2]);
      expect(pages.flat().map((s) => s.sessionId)).toEqual(newestFirst);
      expect(inserted).toHaveLength(8);

      const fresh = await listSessions(boss, 'limit=100');
      expect((fresh.body.sessions as SessionView[]).map((s) => s.sessionId)).toEqual([...inserted.reverse(), ...newestFirst]);
      expect(fresh.body.pagination).toEqual({ hasMore: false, nextCursor: null });
    });

    it('deleting the session a cursor points at, while paging, neither repeats nor skips any other', async () => {
      const boss = await ownerOfNewOrg();
      const created: string[] = [];
      for (let i = 0; i < 9; i++) created.push((await createSession(boss)).sessionId);
      const newestFirst = [...created].reverse();
      let last: string | undefined;
      const deleted: string[] = [];
      const pages = await walk<SessionView>(
        async (cursor) => {
          const res = await listSessions(boss, `limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          last = (res.body.sessions as SessionView[]).at(-1)?.sessionId;
          return res;
        },
        'sessions',
        async () => {
          expectStatus(await http().delete(path(last)).set(boss.auth), 204);
          deleted.push(last!);
        },
      );
      expect(deleted).toHaveLength(2);
      expect(pages.flat().map((s) => s.sessionId)).toEqual(newestFirst);
      const remaining = ((await listSessions(boss, 'limit=100')).body.sessions as SessionView[]).map((s) => s.sessionId);
      expect(remaining).toEqual(newestFirst.filter((id) => !deleted.includes(id)));
    });

    it('a cursor of another organization’s list shows only the caller’s own sessions', async () => {
      const a = await ownerOfNewOrg();
      const b = await ownerOfNewOrg();
      const bOlder = await createSession(b);
      for (let i = 0; i < 3; i++) await createSession(a, { title: `a${i}` });
      const bNewer = await createSession(b);
      const aCursor = (await listSessions(a, 'limit=1')).body.pagination.nextCursor as string;
      const res = await listSessions(b, `cursor=${encodeURIComponent(aCursor)}`);
      expectStatus(res, 200);
      const ids = (res.body.sessions as SessionView[]).map((s) => s.sessionId);
      expect(ids.every((id) => [bOlder.sessionId, bNewer.sessionId].includes(id))).toBe(true);
      expect(res.text).not.toMatch(/"title":"a\d"/);
    });

    it('sessions created at the same moment are each listed exactly once, ordered by createdAt then sessionId, descending', async () => {
      const boss = await ownerOfNewOrg();
      const created = await Promise.all(Array.from({ length: 15 }, () => createSession(boss)));
      const pages = await walk<SessionView>((cursor) => listSessions(boss, `limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`), 'sessions');
      const listed = pages.flat();
      expect(listed).toHaveLength(15);
      expect(new Set(listed.map((s) => s.sessionId))).toEqual(new Set(created.map((s) => s.sessionId)));
      for (let i = 1; i < listed.length; i++) {
        const [a, b] = [listed[i - 1], listed[i]];
        expect(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.sessionId > b.sessionId)).toBe(true);
      }
    });

    it('lists messages in conversation order across pages', async () => {
      const session = await createSession(owner);
      const ids: string[] = [];
      for (let i = 0; i < 9; i++) ids.push((await addMessage(i % 2 ? manager : owner, session.sessionId, { text: `n${i}` })).messageId);
      const pages = await walk<MessageView>(
        (cursor) => getMessages(owner, session.sessionId, `limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
        'messages',
        // Messages added while paging come after the walk's position: they show up on the last page.
        async () => {
          if (ids.length < 11) ids.push((await addMessage(owner, session.sessionId, { text: `n${ids.length}` })).messageId);
        },
      );
      const listed = pages.flat();
      expect(listed.map((m) => m.id)).toEqual(ids);
      expect(pages.map((p) => p.length)).toEqual([4, 4, 3]);
      expectParentChain(listed);
    });

    it('role keeps only the messages of that role, in order, across pages; unfiltered shows them all', async () => {
      const boss = await ownerOfNewOrg();
      const session = await createSession(boss);
      const u1 = (await addMessage(boss, session.sessionId, { text: 'u1' })).messageId;
      const work = await claim(boss);
      const appended = await http()
        .post(`/api/v0/agent/sessions/${session.sessionId}/messages`)
        .set(boss.auth)
        .send({
          turnId: work.turnId,
          messages: [
            { role: 'assistant', content: [{ type: 'text', text: 'a1' }] },
            { role: 'tool', content: [{ type: 'tool_result', toolUseId: 'call-1', content: 'ok' }] },
            { role: 'system', content: [{ type: 'text', text: 'sys' }] },
            { role: 'assistant', content: [{ type: 'text', text: 'a2' }] },
          ],
        });
      expectStatus(appended, 200);
      const [a1, tool, sys, a2] = (appended.body.messages as MessageView[]).map((m) => m.id);
      const u2 = (await addMessage(boss, session.sessionId, { text: 'u2' })).messageId;

      const all = await allMessages(boss, session.sessionId);
      expect(all.map((m) => m.id)).toEqual([u1, a1, tool, sys, a2, u2]);
      expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'system', 'assistant', 'user']);
      all.forEach((m) => expectValid(validateMessage, m));
      expectParentChain(all);
      expect(all.filter((m) => m.role !== 'user').every((m) => !('userMessageSource' in m))).toBe(true);

      for (const [role, expected] of [['user', [u1, u2]], ['assistant', [a1, a2]], ['tool', [tool]]] as const) {
        const pages = await walk<MessageView>(
          (cursor) => getMessages(boss, session.sessionId, `role=${role}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
          'messages',
        );
        expect(pages.flat().map((m) => m.id)).toEqual(expected);
        expect(pages.flat().every((m) => m.role === role)).toBe(true);
      }
      expect((await readSession(boss, session.sessionId)).messageCount).toBe(6);
    });
  });

  // --- roles and isolation -------------------------------------------------------------------

  describe('roles and isolation', () => {
    let ownerSession: SessionView;
    let memberSession: SessionView;
    let member2Session: SessionView;
    let guestOwn: SessionView;

    beforeAll(async () => {
      ownerSession = await createSession(owner, { title: 'owner secret title' });
      memberSession = await createSession(member, { title: 'member' });
      member2Session = await createSession(member2, { title: 'member2' });
      await addMessage(member2, member2Session.sessionId, { text: 'by member2' });
      guestOwn = await guestSession(guest, 'guest own');
    });

    const writes = (user: TestUser, id: string) =>
      [
        ['PATCH', () => http().patch(path(id)).set(user.auth).send({ title: 'changed' })],
        ['DELETE', () => http().delete(path(id)).set(user.auth)],
        ['add-message', () => postMessage(user, id, { text: 'sneaky' })],
      ] as const;

    it('a guest cannot create sessions: 403 insufficient_role', async () => {
      expectV0Error(await http().post(path()).set(guest.auth).send({ title: 'mine' }), 403, 'insufficient_role');
    });

    it('a guest gets 403 insufficient_role on every write, even to their own session, and nothing changes', async () => {
      for (const id of [guestOwn.sessionId, ownerSession.sessionId, randomUUID()]) {
        for (const [, write] of writes(guest, id)) expectV0Error(await write(), 403, 'insufficient_role');
      }
      expect(await readSession(guest, guestOwn.sessionId)).toEqual(guestOwn);
    });

    it('a guest reads their own session and its messages, and sees only their own sessions in the list', async () => {
      expect(await readSession(guest, guestOwn.sessionId)).toEqual(guestOwn);
      expectStatus(await getMessages(guest, guestOwn.sessionId), 200);
      const listed = await listSessions(guest, 'limit=100');
      expectStatus(listed, 200);
      expect((listed.body.sessions as SessionView[]).map((s) => s.sessionId)).toEqual([guestOwn.sessionId]);
    });

    it('a guest gets 404 for other users’ sessions and their messages', async () => {
      for (const id of [ownerSession.sessionId, member2Session.sessionId]) {
        expectV0Error(await getSession(guest, id), 404, 'session_not_found');
        expectV0Error(await getMessages(guest, id), 404, 'session_not_found');
      }
    });

    it('a member reads another member’s session, its messages, and every session of the organization', async () => {
      expect((await readSession(member, member2Session.sessionId)).title).toBe('member2');
      const messages = await allMessages(member, member2Session.sessionId);
      expect(messages.map((m) => m.content)).toEqual([[{ type: 'text', text: 'by member2' }]]);
      const listed = ((await listSessions(member, 'limit=100')).body.sessions as SessionView[]).map((s) => s.sessionId);
      expect(listed).toEqual(expect.arrayContaining([ownerSession.sessionId, memberSession.sessionId, member2Session.sessionId, guestOwn.sessionId]));
    });

    it('a member gets 403 read_only_role writing another member’s or the owner’s session, and nothing changes', async () => {
      for (const target of [member2Session, ownerSession]) {
        const before = await readSession(owner, target.sessionId);
        for (const [, write] of writes(member, target.sessionId)) expectV0Error(await write(), 403, 'read_only_role');
        const keyed = await http().post(path(target.sessionId, '/messages')).set(member.auth).set('Idempotency-Key', `ro-${target.sessionId}`).send({ text: 'x' });
        expectV0Error(keyed, 403, 'read_only_role');
        expect(await readSession(owner, target.sessionId)).toEqual(before);
      }
    });

    it('a member writes their own session', async () => {
      const session = await createSession(member, { title: 'mine' });
      expect((await addMessage(member, session.sessionId)).status).toBe('pending');
      const patched = await http().patch(path(session.sessionId)).set(member.auth).send({ title: 'still mine' });
      expectStatus(patched, 200);
      expect(patched.body.title).toBe('still mine');
      expectStatus(await http().delete(path(session.sessionId)).set(member.auth), 204);
    });

    it('owners and managers write any session of their organization', async () => {
      const target = await createSession(member, { title: 'for the managers' });
      expectStatus(await http().patch(path(target.sessionId)).set(manager.auth).send({ title: 'renamed by manager' }), 200);
      await addMessage(manager, target.sessionId, { text: 'from manager' });
      await addMessage(owner, target.sessionId, { text: 'from owner' });
      expect(await readSession(member, target.sessionId)).toMatchObject({ title: 'renamed by manager', messageCount: 2 });
      expectStatus(await http().delete(path(target.sessionId)).set(manager.auth), 204);
      expectV0Error(await getSession(member, target.sessionId), 404, 'session_not_found');
    });

    it('another organization’s session answers 404 session_not_found on every endpoint, revealing nothing', async () => {
      const before = await readSession(owner, ownerSession.sessionId);
      const id = ownerSession.sessionId;
      const responses: Array<[string, Response]> = [
        ['GET', await getSession(outsider, id)],
        ['PATCH', await http().patch(path(id)).set(outsider.auth).send({ title: 'hijacked' })],
        ['DELETE', await http().delete(path(id)).set(outsider.auth)],
        ['GET messages', await getMessages(outsider, id)],
        ['POST messages', await postMessage(outsider, id, { text: 'hello from outside' })],
        ['POST messages keyed', await http().post(path(id, '/messages')).set(outsider.auth).set('Idempotency-Key', 'outside').send({ text: 'x' })],
      ];
      for (const [, res] of responses) {
        expectV0Error(res, 404, 'session_not_found');
        expect(res.text).not.toContain('owner secret title');
        expect(res.text).not.toContain(owner.organizationId);
      }
      expect(await readSession(owner, id)).toEqual(before);
      const listed = (await listSessions(outsider, 'limit=100')).body.sessions as SessionView[];
      expect(listed.some((s) => [ownerSession, memberSession, member2Session, guestOwn].some((o) => o.sessionId === s.sessionId))).toBe(false);
    });

    it.each(['not-a-uuid', '12345', `${randomUUID()}x`, randomUUID(), '%20'])('session id %s answers 404 session_not_found on every endpoint', async (id) => {
      const responses: Array<[string, Response]> = [
        ['GET', await getSession(owner, id)],
        ['PATCH', await http().patch(path(id)).set(owner.auth).send({ title: 't' })],
        ['DELETE', await http().delete(path(id)).set(owner.auth)],
        ['GET messages', await getMessages(owner, id)],
        ['POST messages', await postMessage(owner, id, { text: 'x' })],
        ['POST messages (member)', await postMessage(member, id, { text: 'x' })],
      ];
      for (const [, res] of responses) expectV0Error(res, 404, 'session_not_found');
    });
  });

  // --- message history feature, credentials --------------------------------------------------

  describe('message history and credentials', () => {
    let noHistory: TestUser;
    let someSessionOfOrgA: string;

    beforeAll(async () => {
      noHistory = await createUser(t, Role.Owner, await createOrganization(t, {}));
      someSessionOfOrgA = (await createSession(member)).sessionId;
    });

    it('list-messages answers 403 message_history_disabled where the feature is off, even for a session that does not exist', async () => {
      const session = await createSession(noHistory);
      expect((await addMessage(noHistory, session.sessionId, { text: 'still stored' })).status).toBe('pending');
      for (const id of [session.sessionId, randomUUID(), 'not-a-uuid', someSessionOfOrgA]) {
        const res = await getMessages(noHistory, id);
        expectV0Error(res, 403, 'message_history_disabled');
        expect(res.body.title).toBe('Forbidden');
        expect(res.body.metadata).toEqual({ code: 'message_history_disabled' });
      }
      expect((await readSession(noHistory, session.sessionId)).messageCount).toBe(1);
    });

    it.each([
      ['no credentials', {}, 'missing_credentials'],
      ['an unknown key', { Authorization: `Bearer apk_${'Q'.repeat(43)}` }, 'invalid_credentials'],
    ])('%s answers 401 in the v0 body on every endpoint', async (_, headers, code) => {
      const id = someSessionOfOrgA;
      const responses = [
        await http().post(path()).set(headers).send({}),
        await http().get(path()).set(headers),
        await http().get(path(id)).set(headers),
        await http().patch(path(id)).set(headers).send({ title: 'x' }),
        await http().delete(path(id)).set(headers),
        await http().get(path(id, '/messages')).set(headers),
        await http().post(path(id, '/messages')).set(headers).send({ text: 'x' }),
      ];
      for (const res of responses) {
        expectV0Error(res, 401, code);
        expect(res.body.title).toBe('Unauthorized');
      }
      expect((await readSession(member, id)).messageCount).toBe(0);
    });
  });

  // --- concurrency ---------------------------------------------------------------------------

  describe('concurrency', () => {
    it('20 concurrent messages from two users all succeed and form one total order', async () => {
      const session = await createSession(owner);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => postMessage(i % 2 ? manager : owner, session.sessionId, { text: `c${i}` })),
      );
      for (const res of results) {
        expectStatus(res, 200);
        expect(res.body.status).toBe('pending');
      }
      const read = await readSession(owner, session.sessionId);
      expect(read).toMatchObject({ messageCount: 20, status: 'pending' });

      const messages = await allMessages(owner, session.sessionId);
      expect(messages).toHaveLength(20);
      expect(new Set(messages.map((m) => m.id))).toEqual(new Set(results.map((r) => r.body.messageId as string)));
      expect(new Set(messages.map((m) => (m.content[0] as { text: string }).text))).toEqual(new Set(Array.from({ length: 20 }, (_, i) => `c${i}`)));
      expectParentChain(messages);
      // The paged walk sees the same order.
      const pages = await walk<MessageView>((cursor) => getMessages(owner, session.sessionId, `limit=6${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`), 'messages');
      expect(pages.flat().map((m) => m.id)).toEqual(messages.map((m) => m.id));
    });

    // Each message's createdAt (and the session's updatedAt) is taken before the session's row lock,
    // so under contention a later message could carry an earlier time.
    async function concurrentMessages(): Promise<{ session: SessionView; times: number[] }> {
      const created = await createSession(owner);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => postMessage(i % 2 ? manager : owner, created.sessionId, { text: `t${i}` })));
      for (const res of results) expectStatus(res, 200);
      const times = (await allMessages(owner, created.sessionId)).map((m) => m.createdAt);
      return { session: await readSession(owner, created.sessionId), times };
    }

    it('under concurrent messages, createdAt never goes backwards along the conversation', async () => {
      const { times } = await concurrentMessages();
      expect(times).toEqual([...times].sort((a, b) => a - b));
    });

    it('under concurrent messages, the session’s updatedAt is not older than its newest message', async () => {
      // The race is timing-dependent: three rounds make it show on PostgreSQL nearly every run.
      for (let round = 0; round < 3; round++) {
        const { session, times } = await concurrentMessages();
        expect({ round, updatedAt: session.updatedAt, newestMessage: Math.max(...times), regressed: session.updatedAt < Math.max(...times) }).toMatchObject({ regressed: false });
      }
    });

    it('concurrent settings changes are all kept (each merges into the latest settings)', async () => {
      const session = await createSession(owner, { sessionSettings: { model: 'base' } });
      const changes: Json[] = [
        { specModeModel: 'spec' },
        { reasoningEffort: 'high' },
        { interactionMode: 'spec' },
        { autonomyLevel: 'low' },
        { autonomyMode: 'unattended' },
        { providerLock: 'custom' },
        { apiProviderLock: 'responses' },
        { archivedAt: '2026-03-01T00:00:00.000Z' },
        { enabledToolIds: ['e'] },
        { disabledToolIds: ['d'] },
        { tags: [{ name: 'n', metadata: {} }] },
      ];
      const results = await Promise.all(changes.map((sessionSettings, i) => http().patch(path(session.sessionId)).set(i % 2 ? manager.auth : owner.auth).send({ sessionSettings })));
      for (const res of results) expectStatus(res, 200);
      expect((await readSession(owner, session.sessionId)).sessionSettings).toEqual(Object.assign({ model: 'base' }, ...changes));
    });

    it('messages racing a DELETE either land before it (then go with it) or answer 404; never a 500', async () => {
      const session = await createSession(owner);
      const requests = Array.from({ length: 10 }, (_, i) => postMessage(i % 2 ? manager : owner, session.sessionId, { text: `r${i}` }));
      requests.splice(5, 0, http().delete(path(session.sessionId)).set(owner.auth));
      const results = await Promise.all(requests);
      expectStatus(results[5], 204);
      for (const res of results.filter((_, i) => i !== 5)) {
        if (res.status === 404) expectV0Error(res, 404, 'session_not_found');
        else expectStatus(res, 200);
      }
      expectV0Error(await getSession(owner, session.sessionId), 404, 'session_not_found');
      const rows = (await t.app.get(DataSource).query('SELECT count(*)::int AS n FROM messages WHERE session_id = $1', [session.sessionId])) as Array<{ n: number }>;
      expect(rows[0].n).toBe(0);
    });

    it('concurrent messages from a member to their own session all succeed', async () => {
      const session = await createSession(member);
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => postMessage(member, session.sessionId, { text: `m${i}` })));
      for (const res of results) expectStatus(res, 200);
      expect((await readSession(member, session.sessionId)).messageCount).toBe(6);
      expectParentChain(await allMessages(member, session.sessionId));
    });
  });

  // --- idempotency ---------------------------------------------------------------------------

  describe('Idempotency-Key', () => {
    const keyed = (user: TestUser, id: string, key: string, body: Json) => http().post(path(id, '/messages')).set(user.auth).set('Idempotency-Key', key).send(body);

    it('the same key and body twice: the same answer, marked replayed, and one message', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      const first = await keyed(owner, session.sessionId, key, { text: 'once' });
      expectStatus(first, 200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const second = await keyed(owner, session.sessionId, key, { text: 'once' });
      expectStatus(second, 200);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body).toEqual(first.body);
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
      expect((await allMessages(owner, session.sessionId)).map((m) => m.id)).toEqual([first.body.messageId]);
    });

    it('the same body with its keys in another order is the same request', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      const first = await keyed(owner, session.sessionId, key, { text: 'pic', images: [image(PNG, 'image/png')] });
      const second = await keyed(owner, session.sessionId, key, { images: [{ mediaType: 'image/png', data: PNG, type: 'base64' }], text: 'pic' });
      expectStatus(second, 200);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body).toEqual(first.body);
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
    });

    it('the same key with another body, or another session, answers 422 idempotency_key_reused and does nothing', async () => {
      const session = await createSession(owner);
      const other = await createSession(owner);
      const key = randomUUID();
      expectStatus(await keyed(owner, session.sessionId, key, { text: 'original' }), 200);
      const changed = await keyed(owner, session.sessionId, key, { text: 'different' });
      expectV0Error(changed, 422, 'idempotency_key_reused');
      expect(changed.body.detail).toContain('Idempotency-Key');
      expectV0Error(await keyed(owner, other.sessionId, key, { text: 'original' }), 422, 'idempotency_key_reused');
      // Used on create-session too: another route, so another request.
      expectV0Error(await http().post(path()).set(owner.auth).set('Idempotency-Key', key).send({}), 422, 'idempotency_key_reused');
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
      expect((await readSession(owner, other.sessionId)).messageCount).toBe(0);
    });

    it('keys are per user: another user with the same key and body creates their own message', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      const mine = await keyed(owner, session.sessionId, key, { text: 'same' });
      const theirs = await keyed(manager, session.sessionId, key, { text: 'same' });
      expectStatus(theirs, 200);
      expect(theirs.headers['idempotent-replayed']).toBeUndefined();
      expect(theirs.body.messageId).not.toBe(mine.body.messageId);
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(2);
      // And another organization's user with the same key on its own session.
      const outside = await createSession(outsider);
      const res = await keyed(outsider, outside.sessionId, key, { text: 'same' });
      expectStatus(res, 200);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
    });

    it('5 concurrent requests with one key create exactly one message and all get its answer', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      const results = await Promise.all(Array.from({ length: 5 }, () => keyed(owner, session.sessionId, key, { text: 'racing' })));
      for (const res of results) expectStatus(res, 200);
      expect(new Set(results.map((r) => r.body.messageId as string)).size).toBe(1);
      expect(results.filter((r) => r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
    });

    it('a failed request does not use up its key', async () => {
      const session = await createSession(owner);
      const key = randomUUID();
      expectV0Error(await keyed(owner, randomUUID(), key, { text: 'nowhere' }), 404, 'session_not_found');
      expectV0Error(await keyed(owner, session.sessionId, key, { text: '' }), 400, 'validation_failed');
      const res = await keyed(owner, session.sessionId, key, { text: 'now it works' });
      expectStatus(res, 200);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(1);
    });

    it.each([
      ['300 characters', 'k'.repeat(300)],
      ['256 characters', 'k'.repeat(256)],
      ['a space', 'my key'],
      ['empty', ''],
      ['a non-ASCII character', 'clé'],
    ])('a key with %s answers 400 naming Idempotency-Key and does nothing', async (_, key) => {
      const session = await createSession(owner);
      const res = await keyed(owner, session.sessionId, key, { text: 'x' });
      expectInvalid(res, 'Idempotency-Key');
      const create = await http().post(path()).set(owner.auth).set('Idempotency-Key', key).send({ title: 'not created' });
      expectInvalid(create, 'Idempotency-Key');
      expect((await readSession(owner, session.sessionId)).messageCount).toBe(0);
    });

    it('a key of 255 visible ASCII characters is accepted', async () => {
      const session = await createSession(owner);
      const key = `${'!~'.repeat(127)}k`;
      expect(key).toHaveLength(255);
      expectStatus(await keyed(owner, session.sessionId, key, { text: 'x' }), 200);
      expect((await keyed(owner, session.sessionId, key, { text: 'x' })).headers['idempotent-replayed']).toBe('true');
    });

    it('create-session honours the key: 201 both times, the same session, one session created', async () => {
      const boss = await ownerOfNewOrg();
      const key = randomUUID();
      const create = () => http().post(path()).set(boss.auth).set('Idempotency-Key', key).send({ title: 'once', sessionSettings: { model: 'm' } });
      const first = await create();
      expectStatus(first, 201);
      const second = await create();
      expectStatus(second, 201);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(second.body).toEqual(first.body);
      const concurrent = await Promise.all(Array.from({ length: 4 }, () => create()));
      for (const res of concurrent) {
        expectStatus(res, 201);
        expect(res.body).toEqual(first.body);
      }
      const listed = (await listSessions(boss, 'limit=100')).body.sessions as SessionView[];
      expect(listed.map((s) => s.sessionId)).toEqual([first.body.sessionId]);
      expectV0Error(await http().post(path()).set(boss.auth).set('Idempotency-Key', key).send({ title: 'twice' }), 422, 'idempotency_key_reused');
    });
  });

  // --- update and delete ---------------------------------------------------------------------

  describe('PATCH and DELETE', () => {
    it('changes the title, removes it with null, and merges settings; createdAt stays, updatedAt moves on', async () => {
      const tags = [{ name: 'a', metadata: { x: 1 } }];
      const session = await createSession(member, { title: 'Original', sessionSettings: { model: 'm1', reasoningEffort: 'low', tags } });

      const renamed = await http().patch(path(session.sessionId)).set(member.auth).send({ title: 'Renamed' });
      expectStatus(renamed, 200);
      expect(renamed.body).toEqual({ ...session, title: 'Renamed', updatedAt: expect.any(Number) });
      expect(renamed.body.updatedAt).toBeGreaterThanOrEqual(session.updatedAt);
      expectValid(validateSession, renamed.body);
      expect(await readSession(member, session.sessionId)).toEqual(renamed.body);

      const merged = await http()
        .patch(path(session.sessionId))
        .set(member.auth)
        .send({ sessionSettings: { reasoningEffort: 'high', enabledToolIds: ['t1'], archivedAt: '2026-02-01T00:00:00.000Z' } });
      expectStatus(merged, 200);
      expect(merged.body.title).toBe('Renamed');
      expect(merged.body.sessionSettings).toEqual({ model: 'm1', reasoningEffort: 'high', tags, enabledToolIds: ['t1'], archivedAt: '2026-02-01T00:00:00.000Z' });
      expect(await readSession(member, session.sessionId)).toEqual(merged.body);

      const unarchived = await http().patch(path(session.sessionId)).set(member.auth).send({ sessionSettings: { archivedAt: null } });
      expectStatus(unarchived, 200);
      expect(unarchived.body.sessionSettings).toEqual({ model: 'm1', reasoningEffort: 'high', tags, enabledToolIds: ['t1'] });
      merged.body.sessionSettings = unarchived.body.sessionSettings;

      const untitled = await http().patch(path(session.sessionId)).set(member.auth).send({ title: null });
      expectStatus(untitled, 200);
      expect(untitled.body).not.toHaveProperty('title');
      expect(untitled.body.sessionSettings).toEqual(merged.body.sessionSettings);
      const read = await readSession(member, session.sessionId);
      expect(read).not.toHaveProperty('title');
      expect(read).toEqual(untitled.body);
      expect(read.createdAt).toBe(session.createdAt);
      expectValid(validateSession, read);

      const nothing = await http().patch(path(session.sessionId)).set(member.auth).send({});
      expectStatus(nothing, 200);
      expect({ ...nothing.body, updatedAt: 0 }).toEqual({ ...read, updatedAt: 0 });
    });

    it('a PATCH does not change status or messageCount', async () => {
      const session = await createSession(owner);
      await addMessage(owner, session.sessionId);
      const res = await http().patch(path(session.sessionId)).set(owner.auth).send({ title: 'x' });
      expect(res.body).toMatchObject({ status: 'pending', messageCount: 1, title: 'x' });
    });

    it('DELETE answers 204 with no body; the session and its messages are gone for good', async () => {
      const session = await createSession(owner, { title: 'doomed' });
      for (let i = 0; i < 3; i++) await addMessage(owner, session.sessionId, { text: `d${i}` });
      const res = await http().delete(path(session.sessionId)).set(owner.auth);
      expectStatus(res, 204);
      expect(res.text).toBe('');

      expectV0Error(await getSession(owner, session.sessionId), 404, 'session_not_found');
      expectV0Error(await getMessages(owner, session.sessionId), 404, 'session_not_found');
      expectV0Error(await postMessage(owner, session.sessionId, { text: 'late' }), 404, 'session_not_found');
      expectV0Error(await http().patch(path(session.sessionId)).set(owner.auth).send({ title: 'back' }), 404, 'session_not_found');
      expectV0Error(await http().delete(path(session.sessionId)).set(owner.auth), 404, 'session_not_found');
      const listed = (await listSessions(owner, 'limit=100')).body.sessions as SessionView[];
      expect(listed.some((s) => s.sessionId === session.sessionId)).toBe(false);
      const rows = (await t.app.get(DataSource).query('SELECT count(*)::int AS n FROM messages WHERE session_id = $1', [session.sessionId])) as Array<{ n: number }>;
      expect(rows[0].n).toBe(0);
    });
  });
});

describe('Sessions API (v0): request body size limit', () => {
  let t: TestApp;
  let owner: TestUser;
  let sessionId: string;

  beforeAll(async () => {
    t = await startTestApp({ BODY_LIMIT_BYTES: '100000', MESSAGE_BODY_LIMIT_BYTES: '200000' });
    owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
    sessionId = ((await t.http().post('/api/v0/sessions').set(owner.auth).send({})).body as SessionView).sessionId;
  });

  afterAll(() => t.close());

  it('a body over its route\'s limit answers 413 in the v0 body and stores nothing', async () => {
    const res = await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'x'.repeat(250_000) });
    expectV0Error(res, 413, 'payload_too_large');
    expect(res.body.metadata).toEqual({ code: 'payload_too_large', limitBytes: 200000 });
    const images = Array.from({ length: 3 }, () => image(Buffer.concat([Buffer.from(PNG, 'base64'), Buffer.alloc(60_000)]).toString('base64'), 'image/png'));
    expectV0Error(await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'pics', images }), 413, 'payload_too_large');
    // Other routes take BODY_LIMIT_BYTES: less than add-message.
    for (const refused of [
      await t.http().post('/api/v0/sessions').set(owner.auth).send({ title: 'y'.repeat(150_000) }),
      await t.http().patch(`/api/v0/sessions/${sessionId}`).set(owner.auth).send({ title: 'y'.repeat(150_000) }),
    ]) {
      expectV0Error(refused, 413, 'payload_too_large');
      expect(refused.body.metadata).toEqual({ code: 'payload_too_large', limitBytes: 100000 });
    }
    const read = await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth);
    expect(read.body.messageCount).toBe(0);
  });

  it('a body just under the limit is accepted', async () => {
    const res = await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'x'.repeat(190_000) });
    expectStatus(res, 200);
  });
});
