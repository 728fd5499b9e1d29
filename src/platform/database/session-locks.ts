import { Client, ClientConfig } from 'pg';
import { DataSource } from 'typeorm';
import { AdvisoryLock } from './advisory-locks';
import { poolOf } from './sql';

/** How long a statement on the lock connection may take before the connection counts as lost. */
const QUERY_TIMEOUT_MS = 10_000;

/**
 * Session-level advisory locks held on a connection of their own (not one of the pool's, which
 * are shared between requests): a lock is held for as long as this connection lives, and
 * PostgreSQL releases every one of them when it ends, crash included. Lost connections are
 * reported once through `onLost`; the holder must then act as if it held nothing.
 *
 * PostgreSQL only: PGlite is one session, where advisory locks are always granted.
 */
export class SessionLocks {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly name: string,
    private readonly onLost: (error: Error) => void,
  ) {}

  /** Takes the lock on `key` if no other session holds it; true when this connection holds it. */
  async tryLock(lock: AdvisoryLock, key: string): Promise<boolean> {
    const rows = await this.query<{ locked: boolean }>(await this.connection(), 'SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [lock, key]);
    return rows[0].locked;
  }

  async unlock(lock: AdvisoryLock, key: string): Promise<void> {
    if (this.client) await this.query(this.client, 'SELECT pg_advisory_unlock($1, hashtext($2))', [lock, key]);
  }

  /** A round trip on the connection, if there is one: a dead connection is reported through `onLost`. */
  async check(): Promise<void> {
    if (this.client) await this.query(this.client, 'SELECT 1', []).catch(() => undefined);
  }

  /** Ends the connection, which releases every lock it holds. */
  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /** A statement that fails leaves the locks in doubt: the connection is given up (and its locks with it). */
  private async query<T extends object>(client: Client, text: string, values: unknown[]): Promise<T[]> {
    try {
      return (await client.query<T>(text, values)).rows;
    } catch (error) {
      this.lose(client, error as Error);
      throw error;
    }
  }

  /** Reports the connection lost, once; a connection closed on purpose is not. */
  private lose(client: Client, error: Error): void {
    if (this.client !== client) return;
    this.client = null;
    client.end().catch(() => undefined);
    this.onLost(error);
  }

  private connection(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async open(): Promise<Client> {
    // The pool's own settings (URL, TLS); the password is kept out of the copy by pg, so it is named.
    const pool = poolOf(this.dataSource);
    const options = pool.options as ClientConfig;
    const client = new Client({
      ...options,
      password: options.password,
      application_name: this.name,
      keepAlive: true,
      query_timeout: QUERY_TIMEOUT_MS,
    });
    client.on('error', (error: Error) => this.lose(client, error));
    client.on('end', () => this.lose(client, new Error('the connection ended')));
    try {
      await client.connect();
      // The server notices a vanished client (its host gone from the network) within about 25 s, not
      // the operating system's default of hours, and frees its locks for another instance.
      await client.query('SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3');
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
    return client;
  }
}
