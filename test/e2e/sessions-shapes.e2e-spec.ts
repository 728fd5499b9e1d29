import { ValidateFunction } from 'ajv';
import { TestUser } from '../utils/factories';
import { expectInvalid, expectStatus } from '../utils/v0-errors';
import { image, JPEG, Json, MessageView, pdf, PNG, sessionsFixture, SessionView, textFile } from '../utils/fixtures/sessions';

/** The public v0 sessions API over real HTTP: the shapes it answers, the status of a session and what a message may hold. */

const GIF = 'R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7';
const WEBP = 'UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==';
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('Sessions API (v0)', () => {
  const fixture = sessionsFixture();
  const {
    http,
    path,
    expectValid,
    ownerOfNewOrg,
    createSession,
    listSessions,
    postMessage,
    getMessages,
    addMessage,
    readSession,
    allMessages,
    claim,
    expectParentChain,
  } = fixture;
  let validateSession: ValidateFunction;
  let validateMessage: ValidateFunction;
  let validateSessionPage: ValidateFunction;
  let validateMessagePage: ValidateFunction;
  let owner: TestUser;
  let member: TestUser;
  beforeAll(() => ({ validateSession, validateMessage, validateSessionPage, validateMessagePage, owner, member } = fixture));

  // --- shapes --------------------------------------------------------------------------------

  describe('shapes', () => {
    it('a new session is idle and empty, with integer Unix-ms times and no unset optional field (not even null)', async () => {
      const before = Date.now();
      const res = await http().post(path()).set(owner.auth).send({});
      const after = Date.now();
      expectStatus(res, 201);
      const session = res.body as SessionView;
      expect(Object.keys(session).sort()).toEqual(['createdAt', 'messageCount', 'sessionId', 'status', 'updatedAt']);
      expect(session).toEqual({
        sessionId: expect.stringMatching(UUID_V7),
        status: 'idle',
        messageCount: 0,
        createdAt: expect.any(Number),
        updatedAt: expect.any(Number),
      });
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
      const { warnings, ...session } = await createSession(owner, { title: 'Fix the build', sessionSettings });
      expect(Object.keys(session).sort()).toEqual(['createdAt', 'messageCount', 'sessionId', 'sessionSettings', 'status', 'title', 'updatedAt']);
      // Every session setting acts here: no warnings (docs/controls.md).
      expect(warnings).toBeUndefined();
      expect(session.title).toBe('Fix the build');
      expect(session.sessionSettings).toEqual(sessionSettings);
      expectValid(validateSession, session);
      expect(await readSession(owner, session.sessionId)).toEqual(session);
      const listed = await listSessions(owner, 'limit=100&archived=include');
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
      expect(res.body).toEqual({
        messageId: expect.stringMatching(UUID_V7),
        status: 'pending',
        warnings: [{ code: 'no_agent_for_organization', message: expect.any(String) }],
      });
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
      expectStatus(
        await http().post(`/api/v0/agent/sessions/${session.sessionId}/end-turn`).set(boss.auth).send({ turnId: next.turnId, assistantActiveTimeMs: 1500 }),
        200,
      );
      const idle = await readSession(boss, session.sessionId);
      expect(idle.status).toBe('idle');
      expect(Number.isInteger(idle.completedAt)).toBe(true);
      expect(idle.completedAt).toBeGreaterThanOrEqual(before - 5);
      expect(idle.completedAt).toBeLessThanOrEqual(Date.now());
      expect(idle.sessionSettings).toEqual({ assistantActiveTimeMs: 1500 });
      expectValid(validateSession, idle);

      // A server-maintained setting survives a client's settings change.
      const patched = await http()
        .patch(path(idle.sessionId))
        .set(boss.auth)
        .send({ sessionSettings: { model: 'm' } });
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
      expectInvalid(
        await postMessage(owner, session.sessionId, { text: 'too many', images: Array.from({ length: 21 }, () => image(PNG, 'image/png')) }),
        'images',
      );
    });

    // PostgreSQL refuses NUL in text and jsonb, and lone surrogates in jsonb: such input must be
    // stored and read back intact, or refused with a 400 naming the field; never a 500.
    it.each<[string, 'create' | 'message', Json, string, (read: { session: SessionView; messages: MessageView[] }) => unknown, unknown]>([
      [
        'message text with a NUL character',
        'message',
        { text: 'before\u0000after' },
        'text',
        (r) => r.messages[0]?.content,
        [{ type: 'text', text: 'before\u0000after' }],
      ],
      [
        'message text with a lone surrogate',
        'message',
        { text: 'before\ud800after' },
        'text',
        (r) => r.messages[0]?.content,
        [{ type: 'text', text: 'before\ud800after' }],
      ],
      [
        'a text file with a NUL character',
        'message',
        { text: 'file', files: [textFile('nul\u0000inside')] },
        'files[0].data',
        (r) => r.messages[0]?.content,
        [
          { type: 'text', text: 'file' },
          { type: 'document', source: textFile('nul\u0000inside') },
        ],
      ],
      ['a title with a NUL character', 'create', { title: 'bad\u0000title' }, 'title', (r) => r.session.title, 'bad\u0000title'],
      ['a title with a lone surrogate', 'create', { title: 'bad\ud800title' }, 'title', (r) => r.session.title, 'bad\ud800title'],
      [
        'a setting with a NUL character',
        'create',
        { sessionSettings: { model: 'model\u0000x' } },
        'sessionSettings.model',
        (r) => r.session.sessionSettings,
        { model: 'model\u0000x' },
      ],
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
});
