import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull } from 'typeorm';
import { AdvisoryLock } from '../../../platform/database/advisory-locks';
import { NewestFirst } from '../../../platform/database/keyset';
import { Sql } from '../../../platform/database/sql';
import { Page, toPage } from '../../../platform/http/pagination';
import { WorkerEnrollmentTokenEntity, WorkerPoolEntity } from '../entities';

const POOL_COLUMNS = `organization_id AS "organizationId", id, name, description,
  max_computers_per_worker AS "maxComputersPerWorker", allow_unsandboxed AS "allowUnsandboxed", created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt"`;
const TOKEN_COLUMNS = `organization_id AS "organizationId", id, pool_id AS "poolId", name, prefix, token_hash AS "tokenHash", created_by AS "createdBy",
  created_at AS "createdAt", last_used_at AS "lastUsedAt", expires_at AS "expiresAt", revoked_at AS "revokedAt"`;

/** The SQL of worker pools and their enrollment tokens. */
@Injectable()
export class WorkerPoolsRepository {
  static readonly poolsOrder = new NewestFirst('worker-pools');
  static readonly tokensOrder = new NewestFirst('enrollment-tokens');

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /** Holds the organization's pools still until the transaction ends: counting and naming them, one change at a time. */
  async lockPools(manager: EntityManager, organizationId: string): Promise<number> {
    await this.sql.in(manager).query('workerPools.lock', 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [AdvisoryLock.WorkerPools, organizationId]);
    const [{ count }] = await this.sql
      .in(manager)
      .query<{ count: number }>('workerPools.count', 'SELECT count(*)::int AS count FROM worker_pools WHERE organization_id = $1', [organizationId]);
    return count;
  }

  async insertPool(manager: EntityManager, pool: WorkerPoolEntity): Promise<void> {
    await manager.getRepository(WorkerPoolEntity).insert(pool);
  }

  findPool(organizationId: string, id: string, manager: EntityManager = this.dataSource.manager): Promise<WorkerPoolEntity | null> {
    return manager.getRepository(WorkerPoolEntity).findOneBy({ organizationId, id });
  }

  findPoolByName(organizationId: string, name: string, manager: EntityManager = this.dataSource.manager): Promise<WorkerPoolEntity | null> {
    return manager.getRepository(WorkerPoolEntity).findOneBy({ organizationId, name });
  }

  async savePool(manager: EntityManager, pool: WorkerPoolEntity): Promise<void> {
    await manager.getRepository(WorkerPoolEntity).save(pool);
  }

  async deletePool(manager: EntityManager, pool: Pick<WorkerPoolEntity, 'organizationId' | 'id'>): Promise<void> {
    await manager.getRepository(WorkerPoolEntity).delete({ organizationId: pool.organizationId, id: pool.id });
  }

  async listPools(organizationId: string, cursor: string | undefined, limit: number): Promise<Page<WorkerPoolEntity>> {
    const after = WorkerPoolsRepository.poolsOrder.positionOf(cursor);
    const values: unknown[] = [organizationId, limit + 1];
    const conditions = ['organization_id = $1'];
    if (after) conditions.push(`(created_at, id) < ($${values.push(after.createdAt)}, $${values.push(after.id)})`);
    const rows = await this.sql.query<WorkerPoolEntity>(
      `workerPools.list${after ? '.after' : ''}`,
      `SELECT ${POOL_COLUMNS} FROM worker_pools WHERE ${conditions.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $2`,
      values,
    );
    return toPage(rows, limit, (row) => WorkerPoolsRepository.poolsOrder.cursorOf(row));
  }

  /** Holds the pool's row until the transaction ends: token creations, revocations and registrations into it, one at a time. */
  async lockPool(manager: EntityManager, pool: Pick<WorkerPoolEntity, 'organizationId' | 'id'>): Promise<void> {
    await this.sql
      .in(manager)
      .query('workerPools.lockOne', 'SELECT 1 FROM worker_pools WHERE organization_id = $1 AND id = $2 FOR UPDATE', [pool.organizationId, pool.id]);
  }

  /** Tokens of the pool that could still register a worker, under the pool's row lock (creation counts them one at a time). */
  async countWorkingTokens(manager: EntityManager, pool: Pick<WorkerPoolEntity, 'organizationId' | 'id'>): Promise<number> {
    await this.lockPool(manager, pool);
    const [{ count }] = await this.sql.in(manager).query<{ count: number }>(
      'workerPools.tokens.countWorking',
      `SELECT count(*)::int AS count FROM worker_enrollment_tokens
       WHERE organization_id = $1 AND pool_id = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > clock_timestamp())`,
      [pool.organizationId, pool.id],
    );
    return count;
  }

  async insertToken(manager: EntityManager, token: WorkerEnrollmentTokenEntity): Promise<void> {
    await manager.getRepository(WorkerEnrollmentTokenEntity).insert(token);
  }

  findToken(organizationId: string, poolId: string, id: string): Promise<WorkerEnrollmentTokenEntity | null> {
    return this.dataSource.getRepository(WorkerEnrollmentTokenEntity).findOneBy({ organizationId, poolId, id });
  }

  async listTokens(
    pool: Pick<WorkerPoolEntity, 'organizationId' | 'id'>,
    cursor: string | undefined,
    limit: number,
  ): Promise<Page<WorkerEnrollmentTokenEntity>> {
    const after = WorkerPoolsRepository.tokensOrder.positionOf(cursor);
    const values: unknown[] = [pool.organizationId, pool.id, limit + 1];
    const conditions = ['organization_id = $1', 'pool_id = $2'];
    if (after) conditions.push(`(created_at, id) < ($${values.push(after.createdAt)}, $${values.push(after.id)})`);
    const rows = await this.sql.query<WorkerEnrollmentTokenEntity>(
      `workerPools.tokens.list${after ? '.after' : ''}`,
      `SELECT ${TOKEN_COLUMNS} FROM worker_enrollment_tokens WHERE ${conditions.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $3`,
      values,
    );
    return toPage(rows, limit, (row) => WorkerPoolsRepository.tokensOrder.cursorOf(row));
  }

  /** Marks the token revoked once; revoking again keeps the first time. */
  async revokeToken(
    manager: EntityManager,
    key: Pick<WorkerEnrollmentTokenEntity, 'organizationId' | 'poolId' | 'id'>,
    now: Date,
  ): Promise<WorkerEnrollmentTokenEntity | null> {
    const where = { organizationId: key.organizationId, poolId: key.poolId, id: key.id };
    await manager.getRepository(WorkerEnrollmentTokenEntity).update({ ...where, revokedAt: IsNull() }, { revokedAt: now });
    return manager.getRepository(WorkerEnrollmentTokenEntity).findOneBy(where);
  }
}
