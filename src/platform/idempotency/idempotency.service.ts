import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Sql } from '../database/sql';
import { JobRunner } from '../jobs';
import { IdempotentRequest } from './idempotency-key.decorator';
import { keyReused } from './idempotency.errors';

/**
 * Whose keys these are: a user's, or a computer's when its agent token calls. Two computers of
 * one owner must not replay each other's answers (they hold each other's work).
 */
export interface IdempotencyCaller {
  organizationId: string;
  userId: string;
  credential?: { kind: string; computerId?: string };
}

function scopeOf(caller: IdempotencyCaller): { organizationId: string; userId: string } {
  const computerId = caller.credential?.kind === 'computer' ? caller.credential.computerId : undefined;
  return { organizationId: caller.organizationId, userId: computerId ?? caller.userId };
}

/** How long a key is remembered: retries come within minutes; a day is generous. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;
/** How often expired keys are forgotten. */
const FORGET_EVERY_MS = 60 * 60 * 1000;

export interface IdempotentResult<T> {
  body: T;
  /** True when the body is the stored answer to an earlier request with the same key. */
  replayed: boolean;
}

/**
 * Runs a write at most once per `Idempotency-Key`. The key row is inserted in the same
 * transaction as the work and holds its response, so a stored key always means "done, and this
 * was the answer". Two requests with one key at once: the second's insert waits for the first
 * transaction, then replays its answer (or runs, if the first failed and rolled back).
 */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
    jobs: JobRunner,
  ) {
    jobs.register({ name: 'idempotency.forget-expired', everyMs: FORGET_EVERY_MS, run: () => this.forgetExpiredKeys() });
  }

  async run<T>(
    caller: IdempotencyCaller,
    request: IdempotentRequest | undefined,
    work: (manager: EntityManager) => Promise<T>,
    statusCode = 200,
    { oneStatement = false }: { oneStatement?: boolean } = {},
  ): Promise<IdempotentResult<T>> {
    // Work that is one statement (its events written by it too) needs no transaction of its own.
    if (!request) return { body: oneStatement ? await work(this.dataSource.manager) : await this.dataSource.transaction(work), replayed: false };
    const scope = scopeOf(caller);
    return this.dataSource.transaction(async (manager) => {
      const sql = this.sql.in(manager);
      const claimed = await sql.query(
        'idempotency.claim',
        `INSERT INTO idempotency_keys (organization_id, user_id, key, request_hash, status_code, response, created_at)
         VALUES ($1, $2, $3, $4, $5, 'null'::jsonb, now())
         ON CONFLICT DO NOTHING RETURNING key`,
        [scope.organizationId, scope.userId, request.key, request.requestHash, statusCode],
      );
      if (claimed.length === 0) return { body: await this.replay<T>(manager, scope, request), replayed: true };
      const body = await work(manager);
      await sql.query('idempotency.answer', `UPDATE idempotency_keys SET response = $4::jsonb WHERE organization_id = $1 AND user_id = $2 AND key = $3`, [
        scope.organizationId,
        scope.userId,
        request.key,
        JSON.stringify(body),
      ]);
      return { body, replayed: false };
    });
  }

  private async replay<T>(manager: EntityManager, scope: { organizationId: string; userId: string }, request: IdempotentRequest): Promise<T> {
    const [stored] = await this.sql
      .in(manager)
      .query<{ request_hash: string; response: T }>(
        'idempotency.replay',
        `SELECT request_hash, response FROM idempotency_keys WHERE organization_id = $1 AND user_id = $2 AND key = $3`,
        [scope.organizationId, scope.userId, request.key],
      );
    if (!stored || stored.request_hash !== request.requestHash) {
      throw keyReused();
    }
    return stored.response;
  }

  /** Forgets keys past retention (the `idempotency.forget-expired` job). Safe on every instance at once: a plain DELETE. */
  async forgetExpiredKeys(now = new Date()): Promise<number> {
    const [{ deleted }] = await this.sql.query<{ deleted: number }>(
      'idempotency.forgetExpired',
      `WITH gone AS (DELETE FROM idempotency_keys WHERE created_at < $1 RETURNING 1) SELECT count(*)::int AS deleted FROM gone`,
      [new Date(now.getTime() - IDEMPOTENCY_RETENTION_MS)],
    );
    if (deleted > 0) this.logger.log({ deleted }, 'Forgot expired idempotency keys');
    return deleted;
  }
}
