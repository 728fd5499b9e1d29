import { Logger } from '@nestjs/common';
import { Client, ClientConfig } from 'pg';
import { DataSource } from 'typeorm';
import { poolOf } from './sql';

/** Waits between reconnection attempts: doubles from the first to the last. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 10_000;

export interface PgListenerHandlers {
  /** A notification on the channel. */
  onNotify(payload: string): void;
  /**
   * The connection is (again) listening after having been down: notifications sent meanwhile were
   * lost, so whoever waits on them should look for themselves.
   */
  onResumed(): void;
}

/**
 * `LISTEN` on a PostgreSQL channel over a connection of its own (a pooled connection goes back to
 * the pool between statements, and its LISTEN with it). A lost connection is reopened with
 * backoff until `close()`. PostgreSQL only: PGlite is one session inside this process.
 */
export class PgListener {
  private readonly logger = new Logger(PgListener.name);
  private client: Client | null = null;
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private delayMs = RECONNECT_MIN_MS;
  private readonly given = new WeakSet<Client>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly channel: string,
    private readonly handlers: PgListenerHandlers,
  ) {}

  /** Starts listening; resolves once the first attempt succeeded or failed (failures retry in the background). */
  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    // The pool's own settings (URL, TLS); pg keeps the password out of the copy, so it is named.
    const options = poolOf(this.dataSource).options as ClientConfig;
    const client = new Client({ ...options, password: options.password, application_name: `listen:${this.channel}`, keepAlive: true });
    client.on('notification', (message) => {
      if (message.channel === this.channel && message.payload !== undefined) this.handlers.onNotify(message.payload);
    });
    client.on('error', (error: Error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('the connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel}"`);
    } catch (error) {
      this.lost(client, error as Error);
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.delayMs = RECONNECT_MIN_MS;
    // Harmless at start-up (no one waits yet), needed after an outage.
    this.handlers.onResumed();
  }

  /** Gives the connection up and schedules another, once per connection. */
  private lost(client: Client, error: Error): void {
    if (this.closed || this.given.has(client)) return;
    this.given.add(client);
    if (this.client === client) this.client = null;
    client.end().catch(() => undefined);
    this.logger.warn(`Lost the ${this.channel} listener (${error.message}); reconnecting in ${this.delayMs} ms`);
    // Notifications sent while down are lost: waiters rely on their safety re-check until it is back.
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, this.delayMs);
    this.retryTimer.unref();
    this.delayMs = Math.min(this.delayMs * 2, RECONNECT_MAX_MS);
  }
}
