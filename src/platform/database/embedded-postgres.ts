import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { Logger } from '@nestjs/common';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
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
 * The socket accepts a single connection. pglite-socket can multiplex several, but it keeps
 * only transactions apart: the extended-protocol messages (Parse, Bind, Execute) of two
 * connections interleave on PGlite's one session, so one query could run with another's
 * parameters (seen in our tests). A lock file makes a second process opening the same data
 * directory impossible.
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
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const releaseLock = await EmbeddedPostgres.lock(dataDir);
    let db: PGlite | undefined;
    try {
      const started = Date.now();
      db = await PGlite.create(join(dataDir, 'pgdata'));
      const { socketDir, ownsSocketDir } = await EmbeddedPostgres.socketDirFor(dataDir);
      const socketPath = join(socketDir, SOCKET_NAME);
      await rm(socketPath, { force: true });
      const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 1 });
      await server.start();
      await chmod(socketPath, 0o600);
      const info: EmbeddedServerInfo = { pid: process.pid, socketDir, startedAt: new Date().toISOString() };
      await writeFile(join(dataDir, SERVER_INFO_FILE), JSON.stringify(info), { mode: 0o600 });
      EmbeddedPostgres.logger.log(`PGlite ready in ${Date.now() - started} ms at ${dataDir}`);
      return new EmbeddedPostgres(dataDir, socketDir, db, server, releaseLock, ownsSocketDir);
    } catch (error) {
      await db?.close().catch(() => undefined);
      await releaseLock();
      throw error;
    }
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

  private static async lock(dataDir: string): Promise<() => Promise<void>> {
    try {
      return await lockfile.lock(dataDir, {
        lockfilePath: join(dataDir, LOCK_FILE),
        stale: 15_000,
        update: 5_000,
        retries: 0,
        onCompromised: (error) =>
          EmbeddedPostgres.logger.error(`Lost the lock on ${dataDir}: ${error.message}`),
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ELOCKED') {
        throw new DataDirectoryBusyError(dataDir, await EmbeddedPostgres.runningServer(dataDir));
      }
      throw error;
    }
  }

  private static async socketDirFor(dataDir: string): Promise<{ socketDir: string; ownsSocketDir: boolean }> {
    if (join(dataDir, SOCKET_NAME).length <= MAX_SOCKET_PATH) return { socketDir: dataDir, ownsSocketDir: false };
    return { socketDir: await mkdtemp(join(tmpdir(), 'agent-platform-')), ownsSocketDir: true };
  }
}
