import http from 'node:http';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectV0Error } from '../utils/v0-errors';

/* eslint-disable @typescript-eslint/no-explicit-any -- entries are read as the JSON the wire carries */
type Json = Record<string, any>;

const AUDIT = '/api/v0/organization/audit-log';

/** The audit log over real HTTP: who did what, on which object, from where and when; filters, pages and NDJSON export. */
describe('Audit log', () => {
  let t: TestApp;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let sessionId: string;

  beforeAll(async () => {
    t = await startTestApp();
    const org = await createOrganization(t);
    owner = await createUser(t, Role.Owner, org);
    manager = await createUser(t, Role.Manager, org);
    member = await createUser(t, Role.Member, org);
    sessionId = (await t.http().post('/api/v0/sessions').set(member.auth).set('x-request-id', 'audit-session').send({ title: 'audited' }).expect(201)).body
      .sessionId;
    await t.http().post('/api/v0/organization/members').set(manager.auth).send({ email: 'new@example.test', name: 'New', role: 'guest' }).expect(201);
    await t
      .http()
      .patch('/api/v0/organization/enterprise-controls')
      .set(owner.auth)
      .send({ settings: { restrictMemberVisibility: true } })
      .expect(200);
    await t.http().post(`/api/v0/sessions/${sessionId}/messages`).set(member.auth).send({ text: 'not in the audit log' }).expect(200);
  });

  afterAll(() => t?.close());

  const get = (user: TestUser, query = '') => t.http().get(`${AUDIT}${query}`).set(user.auth);

  it('says who (kind, id, email, role, credential, address, request), what, on which object and when, newest first', async () => {
    const res = await get(owner).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['entries', 'pagination']);
    const entries = res.body.entries as Json[];
    expect(entries.map((e) => e.seq)).toEqual([...entries.map((e) => e.seq)].sort((a, b) => b - a));
    const created = entries.find((e) => e.type === 'session.created')!;
    expect(created).toMatchObject({
      target: { kind: 'session', id: sessionId },
      sessionId,
      actor: {
        kind: 'user',
        userId: member.userId,
        email: member.email,
        role: 'member',
        credential: 'api_key',
        credentialId: member.apiKeyId,
        ip: '127.0.0.1',
        requestId: 'audit-session',
      },
    });
    expect(typeof created.occurredAt).toBe('number');
    expect(entries.find((e) => e.type === 'member.changed')).toMatchObject({
      actor: { userId: manager.userId, role: 'manager' },
      data: { email: 'new@example.test', change: 'added' },
      target: { kind: 'user' },
    });
    expect(entries.find((e) => e.type === 'controls.revised')).toMatchObject({
      actor: { userId: owner.userId },
      data: { changedSettings: ['restrictMemberVisibility'] },
    });
    // Messages are never copied into the audit log, even where history is kept.
    expect(JSON.stringify(entries)).not.toContain('not in the audit log');
  });

  it('is for owners and managers only', async () => {
    await get(manager).expect(200);
    expectV0Error(await get(member), 403, 'insufficient_role');
    expectV0Error(await t.http().get(AUDIT), 401, 'missing_credentials');
    // Another organization's owner sees only theirs.
    const stranger = await createUser(t, Role.Owner);
    const theirs = (await get(stranger).expect(200)).body.entries as Json[];
    expect(theirs.every((e) => e.organizationId === stranger.organizationId)).toBe(true);
    expect(JSON.stringify(theirs)).not.toContain(sessionId);
  });

  it('filters by type, actor and time', async () => {
    const byType = (await get(owner, '?type=session.created,controls.revised').expect(200)).body.entries as Json[];
    expect(byType.map((e) => e.type).sort()).toEqual(['controls.revised', 'session.created']);
    const byActor = (await get(owner, `?actorUserId=${member.userId}`).expect(200)).body.entries as Json[];
    expect(byActor.length).toBeGreaterThan(0);
    expect(byActor.every((e) => e.actor.userId === member.userId)).toBe(true);
    const all = (await get(owner, '?limit=100').expect(200)).body.entries as Json[];
    const pivot = all.find((e) => e.type === 'controls.revised')!.occurredAt as number;
    const since = (await get(owner, `?since=${pivot}&limit=100`).expect(200)).body.entries as Json[];
    expect(since.map((e) => e.seq)).toEqual(all.filter((e) => e.occurredAt >= pivot).map((e) => e.seq));
    const until = (await get(owner, `?until=${encodeURIComponent(new Date(pivot).toISOString())}&limit=100`).expect(200)).body.entries as Json[];
    expect(until.map((e) => e.seq)).toEqual(all.filter((e) => e.occurredAt < pivot).map((e) => e.seq));
    for (const q of ['?type=nope.never', '?actorUserId=me', '?since=yesterday', '?until=2026-01-01', '?format=csv', '?limit=0']) {
      expectV0Error(await get(owner, q), 400, 'validation_failed');
    }
  });

  it('pages with limit and cursor', async () => {
    const all = (await get(owner, '?limit=100').expect(200)).body.entries as Json[];
    const seen: number[] = [];
    let query = '?limit=2';
    for (let i = 0; i < 50; i++) {
      const res = await get(owner, query).expect(200);
      seen.push(...(res.body.entries as Json[]).map((e) => e.seq));
      if (!res.body.pagination.hasMore) break;
      query = `?limit=2&cursor=${encodeURIComponent(res.body.pagination.nextCursor as string)}`;
    }
    expect(seen).toEqual(all.map((e) => e.seq));
    expectV0Error(await get(owner, '?cursor=abc'), 400, 'invalid_cursor');
  });

  it('exports every matching entry as NDJSON, streamed, by Accept or format=ndjson', async () => {
    // More than one export batch.
    for (let i = 0; i < 12; i++) {
      await Promise.all(Array.from({ length: 50 }, () => t.http().post('/api/v0/sessions').set(owner.auth).send({}).expect(201)));
    }
    const all: number[] = [];
    let query = '?limit=100';
    for (;;) {
      const res = await get(owner, query).expect(200);
      all.push(...(res.body.entries as Json[]).map((e) => e.seq));
      if (!res.body.pagination.hasMore) break;
      query = `?limit=100&cursor=${encodeURIComponent(res.body.pagination.nextCursor as string)}`;
    }
    expect(all.length).toBeGreaterThan(600);
    const byAccept = await rawGet(AUDIT, { ...owner.auth, accept: 'application/x-ndjson' });
    expect(byAccept.status).toBe(200);
    expect(byAccept.type).toMatch(/^application\/x-ndjson/);
    expect(byAccept.body.endsWith('\n')).toBe(true);
    const lines = byAccept.body
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Json);
    expect(lines.map((e) => e.seq)).toEqual(all);
    const filtered = await rawGet(`${AUDIT}?format=ndjson&type=controls.revised`, owner.auth);
    expect(
      filtered.body
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as Json).type),
    ).toEqual(['controls.revised']);
    const refused = await rawGet(`${AUDIT}?format=ndjson`, member.auth);
    expect(refused.status).toBe(403);
  });

  function rawGet(path: string, headers: Record<string, string>): Promise<{ status: number; type: string; body: string }> {
    const { port } = t.app.getHttpServer().address() as { port: number };
    return new Promise((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${port}${path}`, { agent: false, headers }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
        })
        .on('error', reject);
    });
  }
});
