import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, rmdir, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROCESSES_TIMEOUT_MS, ServerProcess, setUpFirstOwner, startServer } from '../utils/processes';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';

const run = promisify(execFile);
/** The embedded database's folder fits in 40 MB: the rest of the filesystem is what the test fills. */
const FILESYSTEM_MB = 96;

/** A size-limited tmpfs of its own, where the machine lets this process mount one (root, or the capability); else null. */
async function smallFilesystem(): Promise<string | null> {
  const dir = await mkdtemp(join(tmpdir(), 'disk-full-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${FILESYSTEM_MB}m,mode=0700`, 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status === 0) return dir;
  console.warn(`disk-full test skipped: this machine does not let it mount a tmpfs (${(mounted.stderr || mounted.error?.message || '').trim()})`);
  await rmdir(dir);
  return null;
}

/**
 * The embedded database's disk full, on the real process: a write is refused whole with 503 `storage_full` and
 * `Retry-After`, and an error line tells the operator; reads go on; once space returns the same write (same
 * Idempotency-Key) is stored once, and a restart finds everything, with no repair.
 */
(serverUrl() ? describe.skip : describe)('The embedded database on a full disk (real process, size-limited tmpfs)', () => {
  let database: TestDatabase;
  let mount: string | null = null;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    mount = await smallFilesystem();
    if (mount) await run('cp', ['-R', `${database.dataDir}/.`, mount]);
  }, PROCESSES_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    if (mount) {
      spawnSync('umount', ['-l', mount]);
      await rmdir(mount).catch(() => undefined);
    }
    await database?.drop();
  });

  it(
    'refuses writes with 503 storage_full and an error line, serves reads, and stores the retried write once space returns',
    async () => {
      if (!mount) return;
      const env = { DATA_DIR: mount, RATE_LIMIT_CREDENTIAL_PER_MINUTE: '100000' };
      server = await startServer([], env);
      const key = await setUpFirstOwner(server);
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const url = () => server!.url;
      const created = await fetch(`${url()}/api/v0/sessions`, { method: 'POST', headers, body: JSON.stringify({ title: 'a full disk' }) });
      const { sessionId } = (await created.json()) as { sessionId: string };
      // Random text does not compress: each message takes its size on disk. A retry sends the same body with its key.
      const texts = new Map<number, string>();
      const add = (n: number) => {
        if (!texts.has(n)) texts.set(n, randomBytes(48 * 1024).toString('base64'));
        return fetch(`${url()}/api/v0/sessions/${sessionId}/messages`, {
          method: 'POST',
          headers: { ...headers, 'idempotency-key': `message-${n}` },
          body: JSON.stringify({ text: texts.get(n) }),
        });
      };

      // All but a little of the filesystem taken by something else.
      const { bavail, bsize } = await statfs(mount);
      const filler = join(mount, 'filler');
      await writeFile(filler, Buffer.alloc(Math.max(0, bavail * bsize - 256 * 1024)));

      let stored = 0;
      let refused: Response | undefined;
      for (let n = 0; n < 200 && !refused; n++) {
        const res = await add(n);
        if (res.status === 200) stored++;
        else refused = res;
      }
      expect(refused).toBeDefined();
      const body = (await refused!.json()) as { status: number; metadata: { code: string } };
      expect([refused!.status, refused!.headers.get('retry-after'), body.metadata.code]).toEqual([503, '30', 'storage_full']);
      expect(server.output()).toMatch(/"level":50.*no disk space left: writes are refused \(503 storage_full\)/);
      // The process lives, and reads go on.
      expect(server.child.exitCode).toBeNull();
      const session = await fetch(`${url()}/api/v0/sessions/${sessionId}`, { headers });
      expect(session.status).toBe(200);
      expect(((await session.json()) as { messageCount: number }).messageCount).toBe(stored);
      expect((await fetch(`${url()}/api/v0/sessions`, { headers })).status).toBe(200);
      expect((await fetch(`${url()}/healthz`)).status).toBe(200);

      // Space returns: the write a client retries (same key) is stored, once.
      await rm(filler);
      expect((await add(stored)).status).toBe(200);
      expect((await add(stored)).status).toBe(200);
      const count = async () => ((await (await fetch(`${url()}/api/v0/sessions/${sessionId}`, { headers })).json()) as { messageCount: number }).messageCount;
      expect(await count()).toBe(stored + 1);

      // And after a restart, with no repair: everything there, and writes work.
      expect(await server.stop()).toBe(0);
      server = await startServer([], env);
      expect(await count()).toBe(stored + 1);
      expect((await add(stored + 1)).status).toBe(200);
      expect(server.output()).not.toMatch(/"level":(50|60)/);
      console.info(`disk full: ${stored} messages stored before the disk was full; the next was refused 503 storage_full and stored once space returned`);
    },
    PROCESSES_TIMEOUT_MS,
  );
});
