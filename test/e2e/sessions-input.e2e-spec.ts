import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { Role } from '../../src/modules/auth';
import { encodeCursor } from '../../src/platform/http/cursor';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { expectInvalid, expectStatus, expectV0Error } from '../utils/v0-errors';
import { startTestApp, TestApp } from '../utils/test-app';
import { image, JPEG, MessageView, PDF, pdf, PNG, sessionsFixture, SessionView, textFile } from '../utils/fixtures/sessions';

/** The public v0 sessions API over real HTTP: bad input of every kind, and the request body size limit. */

const NOT_A_PDF = Buffer.from('just some plain text, not a PDF at all').toString('base64');

describe('Sessions API (v0)', () => {
  const fixture = sessionsFixture();
  const { http, path, createSession, getSession, listSessions, postMessage, getMessages, addMessage, readSession } = fixture;
  let owner: TestUser;
  beforeAll(() => ({ owner } = fixture));

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
        [
          'an unknown property in images[i]',
          { text: 'hi', images: [image(PNG, 'image/png'), { ...image(PNG, 'image/png'), name: 'x.png' }] },
          'images[1].name',
        ],
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
        [
          'tokenUsage (kept by the server)',
          { sessionSettings: { tokenUsage: { inputTokens: 1, outputTokens: 1, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0 } } },
          'sessionSettings.tokenUsage',
        ],
        ['assistantActiveTimeMs (kept by the server)', { sessionSettings: { assistantActiveTimeMs: 100 } }, 'sessionSettings.assistantActiveTimeMs'],
      ])('%s answers 400 naming the field', async (_, body, field) => {
        expectInvalid(
          await http()
            .post(path())
            .set(owner.auth)
            .send(body as object),
          field,
        );
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
        [
          'tokenUsage (kept by the server)',
          { sessionSettings: { tokenUsage: { inputTokens: 1, outputTokens: 1, cacheCreationTokens: 0, cacheReadTokens: 0, thinkingTokens: 0 } } },
          'sessionSettings.tokenUsage',
        ],
        ['assistantActiveTimeMs (kept by the server)', { sessionSettings: { assistantActiveTimeMs: 100 } }, 'sessionSettings.assistantActiveTimeMs'],
      ])('%s answers 400 naming the field', async (_, body, field) => {
        expectInvalid(
          await http()
            .patch(path(session.sessionId))
            .set(owner.auth)
            .send(body as object),
          field,
        );
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

  it("a body over its route's limit answers 413 in the v0 body and stores nothing", async () => {
    const res = await t
      .http()
      .post(`/api/v0/sessions/${sessionId}/messages`)
      .set(owner.auth)
      .send({ text: 'x'.repeat(250_000) });
    expectV0Error(res, 413, 'payload_too_large');
    expect(res.body.metadata).toEqual({ code: 'payload_too_large', limitBytes: 200000 });
    const images = Array.from({ length: 3 }, () => image(Buffer.concat([Buffer.from(PNG, 'base64'), Buffer.alloc(60_000)]).toString('base64'), 'image/png'));
    expectV0Error(await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(owner.auth).send({ text: 'pics', images }), 413, 'payload_too_large');
    // Other routes take BODY_LIMIT_BYTES: less than add-message.
    for (const refused of [
      await t
        .http()
        .post('/api/v0/sessions')
        .set(owner.auth)
        .send({ title: 'y'.repeat(150_000) }),
      await t
        .http()
        .patch(`/api/v0/sessions/${sessionId}`)
        .set(owner.auth)
        .send({ title: 'y'.repeat(150_000) }),
    ]) {
      expectV0Error(refused, 413, 'payload_too_large');
      expect(refused.body.metadata).toEqual({ code: 'payload_too_large', limitBytes: 100000 });
    }
    const read = await t.http().get(`/api/v0/sessions/${sessionId}`).set(owner.auth);
    expect(read.body.messageCount).toBe(0);
  });

  it('a body just under the limit is accepted', async () => {
    const res = await t
      .http()
      .post(`/api/v0/sessions/${sessionId}/messages`)
      .set(owner.auth)
      .send({ text: 'x'.repeat(190_000) });
    expectStatus(res, 200);
  });
});
