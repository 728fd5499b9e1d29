import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { DB_NOW, Sql } from '../../../platform/database/sql';
import { NewestFirst } from '../../../platform/database/keyset';
import { Page, toPage } from '../../../platform/http/pagination';
import { WorkerEnrollmentTokenEntity, WorkerEntity, WorkerPoolEntity } from '../entities';
import { AdvisoryLock } from '../../../platform/database/advisory-locks';
import { PlacementNames, WaitingComputer, WorkerRoom } from './placement';
import { WorkerCapacity, WorkerStatus, WorkerUsage } from './worker';
import { MAX_COMPUTERS_PER_WORKER } from './worker';

const WORKER_COLUMNS = `organization_id AS "organizationId", id, pool_id AS "poolId", enrollment_token_id AS "enrollmentTokenId", name, hostname,
  labels, capacity, usage, sandboxed, version, session_hash AS "sessionHash", status, registered_at AS "registeredAt",
  last_seen_at AS "lastSeenAt", lease_expires_at AS "leaseExpiresAt", ended_at AS "endedAt"`;

/** An enrollment token with its pool, as registration reads them. */
export interface EnrollmentGrant {
  token: WorkerEnrollmentTokenEntity;
  pool: WorkerPoolEntity;
}

export interface NewWorker {
  organizationId: string;
  id: string;
  poolId: string;
  enrollmentTokenId: string;
  name: string;
  hostname: string;
  labels: string[];
  capacity: WorkerCapacity;
  sandboxed: boolean;
  version: string;
  sessionHash: string;
}

/** The SQL of workers: registration, leases and their end. */
@Injectable()
export class WorkersRepository {
  static readonly order = new NewestFirst('workers');

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /**
   * The token of this hash with its pool, the pool's row locked: registrations into it count one at a time, and a
   * revocation (which takes the same lock) is either seen here or ends this worker too.
   */
  async lockGrant(manager: EntityManager, tokenHash: string): Promise<EnrollmentGrant | null> {
    const found = await manager.getRepository(WorkerEnrollmentTokenEntity).findOneBy({ tokenHash });
    if (!found) return null;
    const pool = await manager
      .getRepository(WorkerPoolEntity)
      .findOne({ where: { organizationId: found.organizationId, id: found.poolId }, lock: { mode: 'pessimistic_write' } });
    // Read again under the lock: a revocation committed while this waited is seen.
    const token = pool ? await manager.getRepository(WorkerEnrollmentTokenEntity).findOneBy({ organizationId: found.organizationId, id: found.id }) : null;
    return pool && token ? { token, pool } : null;
  }

  async countOnline(manager: EntityManager, pool: Pick<WorkerPoolEntity, 'organizationId' | 'id'>): Promise<number> {
    const [{ count }] = await this.sql
      .in(manager)
      .query<{ count: number }>(
        'workers.countOnline',
        `SELECT count(*)::int AS count FROM workers WHERE organization_id = $1 AND pool_id = $2 AND status = '${WorkerStatus.Online}'`,
        [pool.organizationId, pool.id],
      );
    return count;
  }

  /** Adds the worker, online with a lease of `leaseMs` from now by the database's clock. */
  async insert(manager: EntityManager, worker: NewWorker, leaseMs: number): Promise<WorkerEntity> {
    const [row] = await this.sql.in(manager).query<WorkerEntity>(
      'workers.insert',
      `INSERT INTO workers (organization_id, id, pool_id, enrollment_token_id, name, hostname, labels, capacity, sandboxed, version, session_hash,
         status, registered_at, last_seen_at, lease_expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '${WorkerStatus.Online}', ${DB_NOW}, ${DB_NOW}, ${DB_NOW} + $12 * interval '1 millisecond')
       RETURNING ${WORKER_COLUMNS}`,
      [
        worker.organizationId,
        worker.id,
        worker.poolId,
        worker.enrollmentTokenId,
        worker.name,
        worker.hostname,
        JSON.stringify(worker.labels),
        JSON.stringify(worker.capacity),
        worker.sandboxed,
        worker.version,
        worker.sessionHash,
        leaseMs,
      ],
    );
    await manager
      .getRepository(WorkerEnrollmentTokenEntity)
      .update({ organizationId: worker.organizationId, id: worker.enrollmentTokenId }, { lastUsedAt: row.registeredAt });
    return row;
  }

  /** The worker whose session token has this hash, whatever its status. */
  bySessionHash(sessionHash: string): Promise<WorkerEntity | null> {
    return this.dataSource.getRepository(WorkerEntity).findOneBy({ sessionHash });
  }

  /** Renews an online worker's lease and records its usage; null when it is no longer online. */
  async renew(worker: Pick<WorkerEntity, 'organizationId' | 'id'>, usage: WorkerUsage | null, leaseMs: number): Promise<WorkerEntity | null> {
    const rows = await this.sql.query<WorkerEntity>(
      'workers.renew',
      `UPDATE workers SET usage = coalesce($3::jsonb, usage), last_seen_at = ${DB_NOW}, lease_expires_at = ${DB_NOW} + $4 * interval '1 millisecond'
       WHERE organization_id = $1 AND id = $2 AND status = '${WorkerStatus.Online}'
       RETURNING ${WORKER_COLUMNS}`,
      [worker.organizationId, worker.id, usage === null ? null : JSON.stringify(usage), leaseMs],
    );
    return rows[0] ?? null;
  }

  /** Ends the sessions of the online workers matched, with `status`; the workers it ended. */
  async end(
    manager: EntityManager,
    which: { organizationId: string; workerId?: string; enrollmentTokenId?: string; poolId?: string },
    status: Exclude<WorkerStatus, WorkerStatus.Online>,
  ): Promise<WorkerEntity[]> {
    const values: unknown[] = [which.organizationId];
    const conditions = ['organization_id = $1', `status = '${WorkerStatus.Online}'`];
    if (which.workerId) conditions.push(`id = $${values.push(which.workerId)}`);
    if (which.enrollmentTokenId) conditions.push(`enrollment_token_id = $${values.push(which.enrollmentTokenId)}`);
    if (which.poolId) conditions.push(`pool_id = $${values.push(which.poolId)}`);
    const key = `${which.workerId ? 'w' : ''}${which.enrollmentTokenId ? 't' : ''}${which.poolId ? 'p' : ''}`;
    return this.sql
      .in(manager)
      .query<WorkerEntity>(
        `workers.end.${key}`,
        `UPDATE workers SET status = $${values.push(status)}, ended_at = ${DB_NOW} WHERE ${conditions.join(' AND ')} RETURNING ${WORKER_COLUMNS}`,
        values,
      );
  }

  /** Online workers whose lease ran out, across organizations, made `lost`: claimed so that instances sweeping at once take disjoint ones. */
  lapse(manager: EntityManager, limit: number): Promise<WorkerEntity[]> {
    return this.sql.in(manager).query<WorkerEntity>(
      'workers.lapse',
      `UPDATE workers SET status = '${WorkerStatus.Lost}', ended_at = ${DB_NOW}
       WHERE (organization_id, id) IN (
         SELECT organization_id, id FROM workers WHERE status = '${WorkerStatus.Online}' AND lease_expires_at < clock_timestamp()
         ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING ${WORKER_COLUMNS}`,
      [limit],
    );
  }

  /** Forgets workers whose session ended more than `keepMs` ago (each restart of a worker registers anew). */
  async forgetEnded(keepMs: number, limit: number): Promise<number> {
    const rows = await this.sql.query<{ id: string }>(
      'workers.forgetEnded',
      `DELETE FROM workers WHERE (organization_id, id) IN (
         SELECT organization_id, id FROM workers WHERE status <> '${WorkerStatus.Online}' AND ended_at < clock_timestamp() - $1 * interval '1 millisecond'
         LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [keepMs, limit],
    );
    return rows.length;
  }

  find(organizationId: string, poolId: string, id: string): Promise<WorkerEntity | null> {
    return this.dataSource.getRepository(WorkerEntity).findOneBy({ organizationId, poolId, id });
  }

  async list(pool: Pick<WorkerPoolEntity, 'organizationId' | 'id'>, cursor: string | undefined, limit: number): Promise<Page<WorkerEntity>> {
    const after = WorkersRepository.order.positionOf(cursor);
    const values: unknown[] = [pool.organizationId, pool.id, limit + 1];
    const conditions = ['organization_id = $1', 'pool_id = $2'];
    if (after) conditions.push(`(registered_at, id) < ($${values.push(after.createdAt)}, $${values.push(after.id)})`);
    const rows = await this.sql.query<WorkerEntity>(
      `workers.list${after ? '.after' : ''}`,
      `SELECT ${WORKER_COLUMNS} FROM workers WHERE ${conditions.join(' AND ')} ORDER BY registered_at DESC, id DESC LIMIT $3`,
      values,
    );
    return toPage(rows, limit, (row) => WorkersRepository.order.cursorOf({ createdAt: row.registeredAt, id: row.id }));
  }

  /** Organizations with computers waiting for a worker and a worker online to take them. */
  async organizationsWaiting(limit: number): Promise<string[]> {
    const rows = await this.sql.query<{ organization_id: string }>(
      'workers.organizationsWaiting',
      `SELECT DISTINCT c.organization_id FROM computers c
       WHERE c.on_workers AND c.worker_id IS NULL AND c.status = 'provisioning'
         AND EXISTS (SELECT 1 FROM workers w WHERE w.organization_id = c.organization_id AND w.status = '${WorkerStatus.Online}')
       LIMIT $1`,
      [limit],
    );
    return rows.map((row) => row.organization_id);
  }

  /**
   * The organization's waiting computers, oldest first, and its online workers with their load, under the
   * organization's placement lock (held until the transaction ends): two placers never count a worker's load at once.
   */
  async lockForPlacement(manager: EntityManager, organizationId: string, limit: number): Promise<{ waiting: WaitingComputer[]; workers: PlacementWorker[] }> {
    const sql = this.sql.in(manager);
    await sql.query('workers.lockPlacement', 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [AdvisoryLock.WorkerPlacement, organizationId]);
    const waiting = await sql.query<WaitingComputer>(
      'workers.waitingComputers',
      `SELECT id, pool_id AS "poolId", placement_labels AS labels FROM computers
       WHERE organization_id = $1 AND on_workers AND worker_id IS NULL AND status = 'provisioning'
       ORDER BY created_at, id LIMIT $2 FOR UPDATE`,
      [organizationId, limit],
    );
    if (waiting.length === 0) return { waiting, workers: [] };
    const workers = await sql.query<PlacementWorker>(
      'workers.rooms',
      `SELECT w.id, w.pool_id AS "poolId", w.name, p.name AS "poolName", w.labels, w.registered_at AS "registeredAt",
              least((w.capacity->>'computers')::int, coalesce(p.max_computers_per_worker, ${MAX_COMPUTERS_PER_WORKER})) AS room,
              (SELECT count(*)::int FROM computers c WHERE c.organization_id = w.organization_id AND c.worker_id = w.id) AS held
       FROM workers w JOIN worker_pools p ON p.organization_id = w.organization_id AND p.id = w.pool_id
       WHERE w.organization_id = $1 AND w.status = '${WorkerStatus.Online}' AND w.lease_expires_at > clock_timestamp()`,
      [organizationId],
    );
    return { waiting, workers };
  }

  /** Places a waiting computer on the worker. */
  async place(manager: EntityManager, organizationId: string, computerId: string, workerId: string): Promise<void> {
    await this.sql.in(manager).query(
      'workers.place',
      `UPDATE computers SET worker_id = $3, placed_at = ${DB_NOW}, waiting_since = NULL, updated_at = GREATEST(updated_at, ${DB_NOW})
       WHERE organization_id = $1 AND id = $2 AND worker_id IS NULL`,
      [organizationId, computerId, workerId],
    );
  }

  /** The names of these pools, and of these workers with their pools, for showing where computers run. */
  async names(organizationId: string, poolIds: string[], workerIds: string[]): Promise<PlacementNames> {
    const rows = await this.sql.query<{ kind: 'pool' | 'worker'; id: string; name: string; poolId: string | null; poolName: string | null }>(
      'workers.names',
      `SELECT 'pool' AS kind, id, name, NULL::uuid AS "poolId", NULL AS "poolName" FROM worker_pools WHERE organization_id = $1 AND id = ANY($2::uuid[])
       UNION ALL
       SELECT 'worker', w.id, w.name, w.pool_id, p.name FROM workers w JOIN worker_pools p ON p.organization_id = w.organization_id AND p.id = w.pool_id
       WHERE w.organization_id = $1 AND w.id = ANY($3::uuid[])`,
      [organizationId, poolIds, workerIds],
    );
    const names: PlacementNames = { pools: new Map(), workers: new Map() };
    for (const row of rows) {
      if (row.kind === 'pool') names.pools.set(row.id, row.name);
      else names.workers.set(row.id, { name: row.name, poolId: row.poolId!, poolName: row.poolName! });
    }
    return names;
  }

  /** How many computers were created for the pool: while any is left, the pool cannot be deleted. */
  async countPoolComputers(manager: EntityManager, pool: Pick<WorkerPoolEntity, 'organizationId' | 'id'>): Promise<number> {
    const [{ count }] = await this.sql
      .in(manager)
      .query<{ count: number }>('workers.poolComputers', `SELECT count(*)::int AS count FROM computers WHERE organization_id = $1 AND pool_id = $2`, [
        pool.organizationId,
        pool.id,
      ]);
    return count;
  }

  /** The computers placed on a worker, their rows locked: it has ended, and they are to be moved. */
  computersOn(manager: EntityManager, worker: Pick<WorkerEntity, 'organizationId' | 'id'>): Promise<StrandedComputer[]> {
    return this.sql.in(manager).query<StrandedComputer>(
      'workers.computersOn',
      `SELECT id, organization_id AS "organizationId", provider, status, agent_token_hash AS "agentTokenHash" FROM computers
       WHERE organization_id = $1 AND worker_id = $2 ORDER BY created_at, id FOR UPDATE`,
      [worker.organizationId, worker.id],
    );
  }

  /**
   * Takes a computer off its ended worker: it waits to be placed again, with a new agent token (the old one is the
   * ended worker's to forget), no clones and every step to run again (its workspace was on that worker).
   */
  async unplace(manager: EntityManager, computer: StrandedComputer, token: { hash: string; encrypted: string | null }, status: string): Promise<void> {
    const sql = this.sql.in(manager);
    await sql.query(
      'workers.unplace',
      `UPDATE computers SET worker_id = NULL, placed_at = NULL, waiting_since = ${DB_NOW}, cloned_repo_directories = '[]', status = $3,
         agent_token_hash = $4, agent_token_encrypted = $5, agent_token_created_at = ${DB_NOW}, agent_connected_at = NULL,
         updated_at = GREATEST(updated_at, ${DB_NOW})
       WHERE organization_id = $1 AND id = $2`,
      [computer.organizationId, computer.id, status, token.hash, token.encrypted],
    );
    await sql.query(
      'workers.replan',
      `UPDATE provisioning_steps SET status = 'pending', error = NULL, started_at = NULL, completed_at = NULL, attempts = 0, claim_id = NULL,
         lease_expires_at = NULL
       WHERE organization_id = $1 AND computer_id = $2`,
      [computer.organizationId, computer.id],
    );
  }

  /**
   * Computers that waited for a worker longer than `timeoutMs`, across organizations, each put in error with its first
   * unfinished step failed with `error` (one transaction; rows other instances hold are skipped).
   */
  async timeOutWaiting(manager: EntityManager, timeoutMs: number, limit: number): Promise<TimedOutComputer[]> {
    return this.sql.in(manager).query<TimedOutComputer>(
      'workers.timeOutWaiting',
      `WITH late AS (
         SELECT organization_id, id, pool_id, placement_labels, waiting_since FROM computers
         WHERE on_workers AND worker_id IS NULL AND status = 'provisioning' AND waiting_since < clock_timestamp() - $1 * interval '1 millisecond'
         ORDER BY waiting_since LIMIT $2 FOR UPDATE SKIP LOCKED
       ), failed AS (
         UPDATE provisioning_steps s SET status = 'failed', error = replace($3, '{waited}', round(extract(epoch FROM clock_timestamp() - late.waiting_since))::text),
           started_at = ${DB_NOW}, completed_at = ${DB_NOW}, claim_id = NULL, lease_expires_at = NULL
         FROM late
         WHERE s.organization_id = late.organization_id AND s.computer_id = late.id
           AND s.position = (SELECT min(position) FROM provisioning_steps f WHERE f.organization_id = late.organization_id AND f.computer_id = late.id AND f.status <> 'completed')
         RETURNING s.organization_id, s.computer_id, s.step_id, s.error
       )
       UPDATE computers c SET status = 'error', updated_at = GREATEST(c.updated_at, ${DB_NOW})
       FROM late JOIN failed ON failed.organization_id = late.organization_id AND failed.computer_id = late.id
       WHERE c.organization_id = late.organization_id AND c.id = late.id
       RETURNING c.organization_id AS "organizationId", c.id, c.provider, failed.step_id AS "stepId", failed.error`,
      [timeoutMs, limit, PLACEMENT_TIMED_OUT],
    );
  }

  /** The fleet at a glance, all organizations: workers online, and computers placed on workers or waiting for one. */
  async fleet(): Promise<{ online: number; placed: number; waiting: number }> {
    const [row] = await this.sql.query<{ online: number; placed: number; waiting: number }>(
      'workers.fleet',
      `SELECT (SELECT count(*)::int FROM workers WHERE status = '${WorkerStatus.Online}' AND lease_expires_at IS NOT NULL) AS online,
              (SELECT count(*)::int FROM computers WHERE worker_id IS NOT NULL) AS placed,
              (SELECT count(*)::int FROM computers WHERE on_workers AND worker_id IS NULL AND status = 'provisioning') AS waiting`,
      [],
    );
    return row;
  }

  /** Whether the sweep has anything to watch: a worker online, or a computer waiting for one. */
  async anythingToWatch(): Promise<boolean> {
    const [row] = await this.sql.query<{ any: boolean }>(
      'workers.anythingToWatch',
      `SELECT EXISTS (SELECT 1 FROM workers WHERE status = '${WorkerStatus.Online}' AND lease_expires_at IS NOT NULL)
           OR EXISTS (SELECT 1 FROM computers WHERE on_workers AND worker_id IS NULL AND status = 'provisioning') AS any`,
      [],
    );
    return row.any;
  }
}

/** The failed step's error of a computer no worker took in time; `{waited}` is the seconds it waited. */
const PLACEMENT_TIMED_OUT =
  'No worker of its pool with the labels it needs had room for {waited} s (WORKER_PLACEMENT_TIMEOUT_MS); add a worker or free one, then retry.';

/** A computer on a worker whose session ended. */
export interface StrandedComputer {
  id: string;
  organizationId: string;
  provider: string;
  status: 'provisioning' | 'active' | 'error';
  agentTokenHash: string;
}

/** A computer put in error because no worker took it in time. */
export interface TimedOutComputer {
  organizationId: string;
  id: string;
  provider: string;
  stepId: string;
  error: string;
}

/** An online worker as placement reads it, with its and its pool's names. */
export interface PlacementWorker extends WorkerRoom {
  name: string;
  poolName: string;
}
