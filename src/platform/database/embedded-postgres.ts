import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { Logger } from '@nestjs/common';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as lockfile from 'proper-lockfile';

/** PostgreSQL's own name for a socket on port 5432, so `pg` finds it from the folder alone. */
const SOCKET_NAME = '.s.PGSQL.5432';
/** Unix socket paths are limited to about 107 bytes; keep clear of it. */
const MAX_SOCKET_PATH = 100;
const LOCK_FILE = 'server.lock';
const SERVER_INFO_FILE = 'server.json';

export interface EmbeddedServerInfo {
  pid: number;
  socketDir: string;
  startedAt: string;
}

/** Thrown when another process (usually the running server) holds the data directory. */
export class DataDirectoryBusyError extends Error {
  constructor(
    readonly dataDir: string,
    readonly server: EmbeddedServerInfo | null,
  ) {
    super(
      `The data directory ${dataDir} is in use by another process` +
        (server ? ` (pid ${server.pid}, started ${server.startedAt})` : '') +
        '. Only one process may open an embedded database at a time.',
    );
  }
}

/**
 * The embedded engine: PGlite (PostgreSQL compiled to WebAssembly) served in-process over the
 * PostgreSQL wire protocol on a private Unix socket, so the ordinary `pg` driver talks to it
 * exactly as it talks to a PostgreSQL server.
 *
 * The pool holds a single connection. pglite-socket can multiplex several, but it keeps
 * only transactions apart: the extended-protocol messages (Parse, Bind, Execute) of two
 * connections interleave on PGlite's one session, so one query could run with another's
 * parameters (seen in our tests). The socket admits a second one only so that the pool's
 * replacement for a closed connection is not refused while the server still tears the old one
 * down. A lock file makes a second process opening the same data directory impossible.
 */
export class EmbeddedPostgres {
  private static readonly logger = new Logger('EmbeddedPostgres');

  private constructor(
    readonly dataDir: string,
    readonly socketDir: string,
    private readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    private readonly releaseLock: () => Promise<void>,
    private readonly ownsSocketDir: boolean,
  ) {}

  static async start(dataDir: string): Promise<EmbeddedPostgres> {
    await EmbeddedPostgres.keepPrivate(dataDir);
    const releaseLock = await EmbeddedPostgres.lock(dataDir);
    let db: PGlite | undefined;
    try {
      const started = Date.now();
      // Written at once, so server.json always names the lock's holder (see holderIsGone).
      const { socketDir, ownsSocketDir } = await EmbeddedPostgres.socketDirFor(dataDir);
      const info: EmbeddedServerInfo = { pid: process.pid, socketDir, startedAt: new Date().toISOString() };
      await writeFile(join(dataDir, SERVER_INFO_FILE), JSON.stringify(info), { mode: 0o600 });
      db = await PGlite.create(join(dataDir, 'pgdata'));
      // PGlite unpacks a new database from its image with world-writable modes, whatever the umask.
      await restrict(join(dataDir, 'pgdata'), { recursive: true });
      const socketPath = join(socketDir, SOCKET_NAME);
      await rm(socketPath, { force: true });
      const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 2 });
      await server.start();
      await chmod(socketPath, 0o600);
      EmbeddedPostgres.logger.log(`PGlite ready in ${Date.now() - started} ms at ${dataDir}`);
      return new EmbeddedPostgres(dataDir, socketDir, db, server, releaseLock, ownsSocketDir);
    } catch (error) {
      await db?.close().catch(() => undefined);
      await releaseLock();
      throw error;
    }
  }

  /**
   * The data directory holds every organization's data and the secrets key: only the server's
   * user may read it. The process's umask makes everything it writes from now on 0600 or 0700;
   * what an earlier version or another umask left is restricted here: the folder and its own
   * entries (which closes everything below them), and the database's files (above) entirely.
   * Computers' workspaces are not walked: they can be large, and they sit in 0700 folders.
   */
  private static async keepPrivate(dataDir: string): Promise<void> {
    process.umask(process.umask() | 0o077);
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await restrict(dataDir, { recursive: false });
  }

  /** What the running server wrote about itself, for a CLI that must go through it. */
  static async runningServer(dataDir: string): Promise<EmbeddedServerInfo | null> {
    try {
      const info = JSON.parse(await readFile(join(dataDir, SERVER_INFO_FILE), 'utf8')) as EmbeddedServerInfo;
      process.kill(info.pid, 0);
      return info;
    } catch {
      return null;
    }
  }

  get connectionOptions(): { host: string; port: number; username: string; database: string } {
    return { host: this.socketDir, port: 5432, username: 'postgres', database: 'postgres' };
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
    await rm(join(this.dataDir, SERVER_INFO_FILE), { force: true });
    if (this.ownsSocketDir) await rm(this.socketDir, { recursive: true, force: true });
    await this.releaseLock();
  }

  private static async lock(dataDir: string, retried = false): Promise<() => Promise<void>> {
    const lockPath = join(dataDir, LOCK_FILE);
    try {
      return await lockfile.lock(dataDir, {
        lockfilePath: lockPath,
        stale: 15_000,
        update: 5_000,
        retries: 0,
        onCompromised: (error) => EmbeddedPostgres.logger.error(`Lost the lock on ${dataDir}: ${error.message}`),
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
      if (!retried && (await EmbeddedPostgres.holderIsGone(dataDir, lockPath))) {
        // The holder was killed (SIGKILL, power loss): take over now rather than after `stale`.
        EmbeddedPostgres.logger.warn(`${dataDir} was left locked by a process that no longer runs; taking it over`);
        await rm(lockPath, { recursive: true, force: true });
        return EmbeddedPostgres.lock(dataDir, true);
      }
      throw new DataDirectoryBusyError(dataDir, await EmbeddedPostgres.runningServer(dataDir));
    }
  }

  /**
   * Whether the lock's holder is dead: the pid in server.json no longer runs and the lock was
   * not just taken (a new holder writes server.json right after locking, within this margin).
   */
  private static async holderIsGone(dataDir: string, lockPath: string, waited = false): Promise<boolean> {
    let lockedFor = 0;
    try {
      const info = JSON.parse(await readFile(join(dataDir, SERVER_INFO_FILE), 'utf8')) as EmbeddedServerInfo;
      lockedFor = Date.now() - (await stat(lockPath)).mtimeMs;
      process.kill(info.pid, 0);
      return false;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') return false;
    }
    if (lockedFor >= 2_000) return true;
    // Refreshed moments ago: by the dead holder just before it died, or by a new holder yet to write server.json. Look again after the margin.
    if (waited) return false;
    await new Promise((resolve) => setTimeout(resolve, 2_100 - lockedFor));
    return EmbeddedPostgres.holderIsGone(dataDir, lockPath, true);
  }

  private static async socketDirFor(dataDir: string): Promise<{ socketDir: string; ownsSocketDir: boolean }> {
    if (join(dataDir, SOCKET_NAME).length <= MAX_SOCKET_PATH) return { socketDir: dataDir, ownsSocketDir: false };
    return { socketDir: await mkdtemp(join(tmpdir(), 'agent-platform-')), ownsSocketDir: true };
  }
}

/** Makes `root` and the folders under it 0700 and the files 0600 (one level, or all). */
async function restrict(root: string, { recursive }: { recursive: boolean }): Promise<void> {
  await chmod(root, 0o700);
  for (const entry of await readdir(root, { withFileTypes: true, recursive })) {
    if (entry.isSymbolicLink()) continue;
    await chmod(join(entry.parentPath, entry.name), entry.isDirectory() ? 0o700 : 0o600).catch((error: NodeJS.ErrnoException) => {
      // Removed meanwhile (PGlite's own temporary files).
      if (error.code !== 'ENOENT') throw error;
    });
  }
}
