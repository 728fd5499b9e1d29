import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { ApiKeysService, Role } from '../../src/modules/auth';
import { encodeCursor, sealCursor } from '../../src/platform/http/cursor';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

interface KeyView {
  id: string;
  name: string;
  userId: string;
  createdAt: number;
}

function expectV0Error(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(['detail', 'metadata', 'status', 'title']);
  expect(res.body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String), metadata: { code } });
}

/** Newest first: createdAt descending, then id descending. */
function expectNewestFirst(keys: KeyView[]) {
  for (let i = 1; i < keys.length; i++) {
    const [a, b] = [keys[i - 1], keys[i]];
    expect(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id)).toBe(true);
  }
}

describe('Pagination (GET /settings/api-keys)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });

  afterAll(() => t.close());

  /** Adds keys one after the other; returns their ids in creation order (oldest first). */
  async function addKeys(user: TestUser, count: number, name = 'k'): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const { entity } = await t.app.get(ApiKeysService).create({ organizationId: user.organizationId, userId: user.userId, name: `${name}-${i}` });
      ids.push(entity.id);
    }
    return ids;
  }

  /** A user holding `count` keys (the factory's own first), with their ids newest first. */
  async function userWithKeys(count: number, role: Role = Role.Member, org?: { id: string; slug: string }) {
    const user = await createUser(t, role, org);
    const ids = [user.apiKeyId, ...(await addKeys(user, count - 1))];
    return { user, newestFirst: ids.reverse() };
  }

  const list = (user: TestUser, query: string) =>
    t
      .http()
      .get(`/settings/api-keys${query ? `?${query}` : ''}`)
      .set(user.auth);

  async function walk(user: TestUser, limit: number, between?: () => Promise<unknown>) {
    const pages: KeyView[][] = [];
    let cursor: string | null = null;
    for (let guard = 0; guard < 100; guard++) {
      const query: string = `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await list(user, query);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['apiKeys', 'pagination']);
      expect(Object.keys(res.body.pagination).sort()).toEqual(['hasMore', 'nextCursor']);
      pages.push(res.body.apiKeys);
      const { hasMore, nextCursor } = res.body.pagination;
      if (!hasMore) {
        expect(nextCursor).toBeNull();
        return pages;
      }
      expect(nextCursor).toEqual(expect.any(String));
      expect(res.body.apiKeys).toHaveLength(limit);
      cursor = nextCursor;
      if (between) await between();
    }
    throw new Error('the walk never reached a last page');
  }

  describe('limit', () => {
    let user: TestUser;
    let newestFirst: string[];

    beforeAll(async () => {
      ({ user, newestFirst } = await userWithKeys(25));
    });

    it('defaults to 20', async () => {
      const res = await list(user, '');
      expect(res.status).toBe(200);
      expect(res.body.apiKeys.map((k: KeyView) => k.id)).toEqual(newestFirst.slice(0, 20));
      expect(res.body.pagination).toEqual({ hasMore: true, nextCursor: expect.any(String) });
      const next = await list(user, `cursor=${encodeURIComponent(res.body.pagination.nextCursor)}`);
      expect(next.body.apiKeys.map((k: KeyView) => k.id)).toEqual(newestFirst.slice(20));
      expect(next.body.pagination).toEqual({ hasMore: false, nextCursor: null });
    });

    it('accepts 1', async () => {
      const res = await list(user, 'limit=1');
      expect(res.status).toBe(200);
      expect(res.body.apiKeys.map((k: KeyView) => k.id)).toEqual([newestFirst[0]]);
      expect(res.body.pagination.hasMore).toBe(true);
    });

    it('accepts 25 exactly the size of the list: one page, no cursor', async () => {
      const res = await list(user, 'limit=25');
      expect(res.body.apiKeys).toHaveLength(25);
      expect(res.body.pagination).toEqual({ hasMore: false, nextCursor: null });
    });

    it('accepts 100, and 100 means 100', async () => {
      const { user: many, newestFirst: ids } = await userWithKeys(101);
      const res = await list(many, 'limit=100');
      expect(res.status).toBe(200);
      expect(res.body.apiKeys.map((k: KeyView) => k.id)).toEqual(ids.slice(0, 100));
      expect(res.body.pagination.hasMore).toBe(true);
      const last = await list(many, `limit=100&cursor=${encodeURIComponent(res.body.pagination.nextCursor)}`);
      expect(last.body.apiKeys.map((k: KeyView) => k.id)).toEqual([ids[100]]);
      expect(last.body.pagination).toEqual({ hasMore: false, nextCursor: null });
    });

    // The pattern is ^(100|[1-9][0-9]?)$: a canonical whole number from 1 to 100, nothing else.
    it.each([
      ['0', 'limit=0'],
      ['101', 'limit=101'],
      ['1000', 'limit=1000'],
      ['-1', 'limit=-1'],
      ['1.5', 'limit=1.5'],
      ['5.0', 'limit=5.0'],
      ['abc', 'limit=abc'],
      ['empty', 'limit='],
      ['a bare limit', 'limit'],
      ['a leading zero (01)', 'limit=01'],
      ['a leading zero (007)', 'limit=007'],
      ['exponent (1e1)', 'limit=1e1'],
      ['hex (0x10)', 'limit=0x10'],
      ['a plus sign', 'limit=%2B5'],
      ['a leading space', 'limit=%205'],
      ['a trailing newline', 'limit=5%0A'],
      ['Arabic-Indic digits', `limit=${encodeURIComponent('٥')}`],
      ['repeated (1 and 2)', 'limit=1&limit=2'],
      ['repeated (same value)', 'limit=5&limit=5'],
    ])('rejects limit %s with 400 naming limit', async (_, query) => {
      const res = await list(user, query);
      expectV0Error(res, 400, 'validation_failed');
      expect(res.body.detail).toMatch(/^limit: /);
      expect(res.body.metadata.errors.map((e: { field: string }) => e.field)).toContain('limit');
      expect(res.body.metadata.errors.every((e: { field: string }) => e.field === 'limit')).toBe(true);
    });

    it('rejects an unknown scope and unknown query parameters, naming them', async () => {
      const scope = await list(user, 'scope=everyone');
      expectV0Error(scope, 400, 'validation_failed');
      expect(scope.body.detail).toMatch(/^scope: /);
      const other = await list(user, 'offset=20');
      expectV0Error(other, 400, 'validation_failed');
      expect(other.body.metadata.errors).toEqual([{ field: 'offset', message: 'is not an accepted query parameter (accepted: scope, limit, cursor)' }]);
    });
  });

  describe('walking the pages', () => {
    it('returns each of 30 keys exactly once, newest first, with limit=7', async () => {
      const { user, newestFirst } = await userWithKeys(30);
      const pages = await walk(user, 7);
      expect(pages.map((p) => p.length)).toEqual([7, 7, 7, 7, 2]);
      const keys = pages.flat();
      expect(keys.map((k) => k.id)).toEqual(newestFirst);
      expect(new Set(keys.map((k) => k.id)).size).toBe(30);
      expect(keys.every((k) => k.userId === user.userId)).toBe(true);
      expectNewestFirst(keys);
    });

    it('a list that fills its last page exactly ends with hasMore false on that page', async () => {
      const { user, newestFirst } = await userWithKeys(10);
      const pages = await walk(user, 5);
      expect(pages.map((p) => p.length)).toEqual([5, 5]);
      expect(pages.flat().map((k) => k.id)).toEqual(newestFirst);
    });

    it('the scope=organization list pages over every user’s keys', async () => {
      const org = await createOrganization(t);
      const { user: owner, newestFirst: ownerKeys } = await userWithKeys(4, Role.Owner, org);
      const { newestFirst: memberKeys } = await userWithKeys(5, Role.Member, org);
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const res: Response = await list(owner, `scope=organization&limit=3${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.status).toBe(200);
        ids.push(...res.body.apiKeys.map((k: KeyView) => k.id));
        cursor = res.body.pagination.nextCursor;
      } while (cursor);
      expect(ids).toEqual([...memberKeys, ...ownerKeys]);
    });

    it('keys inserted while paging are neither returned nor make the walk repeat or skip a key', async () => {
      const { user, newestFirst } = await userWithKeys(25);
      const inserted: string[] = [];
      const pages = await walk(user, 5, async () => inserted.push(...(await addKeys(user, 3, 'during'))));
      expect(inserted).toHaveLength(12);
      const ids = pages.flat().map((k) => k.id);
      expect(ids).toEqual(newestFirst);
      expect(ids.filter((id) => inserted.includes(id))).toEqual([]);
      // The new keys exist and are listed first by a fresh walk.
      const fresh = (await walk(user, 100)).flat().map((k) => k.id);
      expect(fresh).toEqual([...inserted.reverse(), ...newestFirst]);
    });
  });

  describe('cursors', () => {
    let user: TestUser;
    let cursor: string;
    let lastOfFirstPage: KeyView;

    beforeAll(async () => {
      ({ user } = await userWithKeys(6));
      const res = await list(user, 'limit=2');
      cursor = res.body.pagination.nextCursor;
      lastOfFirstPage = res.body.apiKeys[1];
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    });

    const withCursor = (value: string, who = user) => list(who, `limit=2&cursor=${encodeURIComponent(value)}`);
    // Sealed with a valid checksum, so only the shape checks can refuse them.
    const raw = (value: unknown) => sealCursor(value);

    it('an unchanged cursor works', async () => {
      const res = await withCursor(cursor);
      expect(res.status).toBe(200);
      expect(res.body.apiKeys).toHaveLength(2);
    });

    it.each([
      ['the first character changed', () => `${cursor[0] === 'A' ? 'B' : 'A'}${cursor.slice(1)}`],
      ['truncated', () => cursor.slice(0, -5)],
      ['doubled', () => cursor + cursor],
      ['random base64url', () => randomBytes(40).toString('base64url')],
      ['random standard base64', () => Buffer.from('\u00ff\u00fe random bytes ???>>>').toString('base64')],
      ['not base64 at all', () => 'not a cursor!'],
      ['with a percent sign', () => '%%%'],
      ['JSON that is an object', () => raw({ list: 'api-keys', createdAt: 1, id: lastOfFirstPage.id })],
      ['JSON with the time as a string', () => raw(['api-keys', String(lastOfFirstPage.createdAt), lastOfFirstPage.id])],
      ['JSON with a fractional time', () => raw(['api-keys', lastOfFirstPage.createdAt + 0.5, lastOfFirstPage.id])],
      ['JSON with an id that is not a uuid', () => raw(['api-keys', lastOfFirstPage.createdAt, "x' OR '1'='1"])],
      ['JSON with the id as a number', () => raw(['api-keys', lastOfFirstPage.createdAt, 12345])],
      ['JSON with keys swapped', () => raw(['api-keys', lastOfFirstPage.id, lastOfFirstPage.createdAt])],
      ['JSON with a key missing', () => raw(['api-keys', lastOfFirstPage.createdAt])],
      ['JSON with an extra key', () => raw(['api-keys', lastOfFirstPage.createdAt, lastOfFirstPage.id, 1])],
      ['JSON null', () => raw(null)],
      ['a cursor of another list', () => encodeCursor('other', [lastOfFirstPage.createdAt, lastOfFirstPage.id])],
      ['a cursor of the sessions list', () => encodeCursor('sessions', [lastOfFirstPage.createdAt, lastOfFirstPage.id])],
    ])('%s answers 400 invalid_cursor', async (_, make) => {
      const res = await withCursor(make());
      expectV0Error(res, 400, 'invalid_cursor');
      expect(res.body.detail).toMatch(/^cursor: /);
      expect(res.body.metadata.errors).toEqual([{ field: 'cursor', message: expect.any(String) }]);
    });

    // A time no Date (or PostgreSQL) can hold must be a 400, not a failed query.
    it.each([
      ['after the last date JavaScript knows', 8_640_000_000_000_001],
      ['the largest safe integer', Number.MAX_SAFE_INTEGER],
      ['the first date JavaScript knows, before 4713 BC, the first PostgreSQL knows', -8_640_000_000_000_000],
      ['year 10000 BC', -377_705_116_800_000],
    ])('a cursor whose time is out of range (%s) answers 400 invalid_cursor, not 500', async (_, time) => {
      const res = await withCursor(raw(['api-keys', time, lastOfFirstPage.id]));
      expect(res.status).not.toBe(500);
      expectV0Error(res, 400, 'invalid_cursor');
    });

    it('no single-character alteration of a cursor answers 500', async () => {
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const statuses = new Set<number>();
      for (let i = 0; i < cursor.length; i++) {
        const replacement = alphabet[(alphabet.indexOf(cursor[i]) + 1) % alphabet.length];
        const res = await withCursor(cursor.slice(0, i) + replacement + cursor.slice(i + 1));
        statuses.add(res.status);
        if (res.status !== 200) expectV0Error(res, 400, 'invalid_cursor');
        else expect(res.body.apiKeys.every((k: KeyView) => k.userId === user.userId)).toBe(true);
      }
      expect(statuses.has(400)).toBe(true);
      expect(statuses.has(500)).toBe(false);
    });

    // Cursors carry a checksum: any alteration that changes what they decode to is refused.
    it('every alteration that changes the decoded cursor answers 400 invalid_cursor', async () => {
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const original = Buffer.from(cursor, 'base64url');
      const accepted: string[] = [];
      for (let i = 0; i < cursor.length; i++) {
        const altered = cursor.slice(0, i) + alphabet[(alphabet.indexOf(cursor[i]) + 1) % alphabet.length] + cursor.slice(i + 1);
        if (Buffer.from(altered, 'base64url').equals(original)) continue; // only unused trailing bits changed
        const res = await withCursor(altered);
        if (res.status !== 400) accepted.push(`${i}: ${res.status}`);
      }
      expect(accepted).toEqual([]);
    });

    it('a cursor longer than 1024 characters answers 400 naming cursor', async () => {
      const res = await withCursor('A'.repeat(1025));
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/^cursor: /);
      expect(res.body.metadata.errors.map((e: { field: string }) => e.field)).toEqual(['cursor']);
    });

    it('an empty or repeated cursor answers 400 naming cursor', async () => {
      for (const query of ['cursor=', `cursor=${cursor}&cursor=${cursor}`]) {
        const res = await list(user, query);
        expect(res.status).toBe(400);
        expect(res.body.detail).toMatch(/^cursor: /);
      }
    });

    it('another organization’s cursor reveals nothing of the first user’s keys', async () => {
      // B's keys are older and newer than A's: the cursor's position falls between them.
      const older = await userWithKeys(3, Role.Owner);
      const b = older.user;
      const a = await userWithKeys(5, Role.Owner);
      const newerOfB = await addKeys(b, 3, 'b-newer');
      const aCursor = (await list(a.user, 'limit=2')).body.pagination.nextCursor as string;
      const aIds = new Set(a.newestFirst);
      const bIds = new Set([...older.newestFirst, ...newerOfB]);

      for (const query of [`cursor=${aCursor}`, `cursor=${aCursor}&scope=organization`, `limit=1&cursor=${aCursor}`]) {
        const res = await list(b, query);
        expect(res.status).toBe(200);
        const ids = res.body.apiKeys.map((k: KeyView) => k.id);
        expect(ids.every((id: string) => bIds.has(id))).toBe(true);
        expect(ids.some((id: string) => aIds.has(id))).toBe(false);
        expect(res.body.apiKeys.every((k: KeyView) => k.userId === b.userId)).toBe(true);
        const text = JSON.stringify(res.body);
        expect(text).not.toContain(a.user.userId);
        expect(text).not.toContain(a.user.organizationId);
        for (const id of aIds) expect(text).not.toContain(id);
      }
    });
  });
});
