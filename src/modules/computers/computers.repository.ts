import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { TokenComputer } from '../auth';
import { AdvisoryLock } from '../../platform/database/advisory-locks';
import { DB_NOW, Sql } from '../../platform/database/sql';
import { ComputerEntity, ProvisioningStepEntity } from './entities';
import { LOCAL_PROVIDER } from './domain/computer';
import { ComputerStatus, ComputerTrigger, nextStatus } from './domain/computer-status';
import { StepStatus } from './domain/provisioning-step';

/** A step claimed by this instance, with its computer. */
export interface ClaimedStep {
  step: ProvisioningStepEntity;
  computer: ComputerEntity;
}

/** How a fenced finish went: `lost` when the claim is no longer this instance's. */
export type FinishOutcome = { lost: true } | { lost: false; computer: ComputerEntity };

/** Told, inside the transaction, of each step that started or finished (to raise its event). */
export type StepMoved = (manager: EntityManager, change: { computer: ComputerEntity; step: ProvisioningStepEntity; from: ComputerStatus }) => void;

const STEP_COLUMNS = `s.organization_id AS "organizationId", s.computer_id AS "computerId", s.position, s.step_id AS "stepId", s.name, s.status, s.error,
  s.started_at AS "startedAt", s.completed_at AS "completedAt", s.install_session_id AS "installSessionId",
  s.attempts, s.claim_id AS "claimId", s.lease_expires_at AS "leaseExpiresAt"`;

/** A computer's key: its organization leads it (see the TenantKeys migration), so statements on one computer name both. */
export type ComputerKey = Pick<ComputerEntity, 'organizationId' | 'id'>;

/** Who claims steps: the server's instances (computers on its host), or one worker (computers placed on it). */
export type StepClaimant = { kind: 'server' } | { kind: 'worker'; organizationId: string; workerId: string };

/** A claimed step, fenced by its claim. */
export type StepFence = Pick<ProvisioningStepEntity, 'organizationId' | 'computerId' | 'position'> & { claimId: string };

/** All SQL of the Computers module. */
@Injectable()
export class ComputersRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: Sql,
  ) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /**
   * What counts against the organization's quotas, under a lock held until the transaction ends:
   * concurrent creates and retries of one organization count and add one after the other, so two
   * can never both take the last slot.
   */
  async lockQuotaUsage(manager: EntityManager, organizationId: string): Promise<{ computers: number; local: number; provisioning: number }> {
    await this.sql.in(manager).query('computers.lockQuotas', 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [AdvisoryLock.ComputerQuotas, organizationId]);
    const [usage] = await this.sql.in(manager).query<{ computers: number; local: number; provisioning: number }>(
      'computers.quotaUsage',
      `SELECT count(*)::int AS computers,
              count(*) FILTER (WHERE provider = $2 AND NOT on_workers)::int AS local,
              count(*) FILTER (WHERE status = $3)::int AS provisioning
       FROM computers WHERE organization_id = $1`,
      [organizationId, LOCAL_PROVIDER, ComputerStatus.Provisioning],
    );
    return usage;
  }

  /** Whether the worker pool exists, its row then held (FOR SHARE) until the transaction ends, so it cannot be deleted meanwhile. */
  async holdPool(manager: EntityManager, organizationId: string, poolId: string): Promise<boolean> {
    const rows = await this.sql
      .in(manager)
      .query('computers.holdPool', 'SELECT 1 FROM worker_pools WHERE organization_id = $1 AND id = $2 FOR SHARE', [organizationId, poolId]);
    return rows.length > 0;
  }

  async insertComputer(manager: EntityManager, computer: ComputerEntity): Promise<void> {
    await manager.getRepository(ComputerEntity).insert(computer);
  }

  async insertSteps(manager: EntityManager, steps: ProvisioningStepEntity[]): Promise<void> {
    await manager.getRepository(ProvisioningStepEntity).insert(steps);
  }

  find(id: string, organizationId: string, manager: EntityManager = this.dataSource.manager, lock = false): Promise<ComputerEntity | null> {
    return manager.getRepository(ComputerEntity).findOne({ where: { id, organizationId }, ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}) });
  }

  /** The organization's computers (or one owner's), newest first. */
  list(organizationId: string, ownerId?: string): Promise<ComputerEntity[]> {
    return this.dataSource.manager.getRepository(ComputerEntity).find({
      where: { organizationId, ...(ownerId ? { ownerId } : {}) },
      order: { createdAt: 'DESC', id: 'DESC' },
    });
  }

  /** Each computer's steps, in order. */
  async stepsOf(organizationId: string, computerIds: string[], manager?: EntityManager): Promise<Map<string, ProvisioningStepEntity[]>> {
    const steps = new Map<string, ProvisioningStepEntity[]>(computerIds.map((id) => [id, []]));
    if (computerIds.length === 0) return steps;
    const rows = await this.sql
      .in(manager)
      .query<ProvisioningStepEntity>(
        'computers.stepsOf',
        `SELECT ${STEP_COLUMNS} FROM provisioning_steps s WHERE s.organization_id = $1 AND s.computer_id = ANY($2::uuid[]) ORDER BY s.computer_id, s.position`,
        [organizationId, computerIds],
      );
    for (const row of rows) steps.get(row.computerId)!.push(row);
    return steps;
  }

  async update(
    manager: EntityManager,
    computer: ComputerKey,
    changes: Partial<
      Pick<
        ComputerEntity,
        'name' | 'remoteUser' | 'hostname' | 'agentConnectedAt' | 'agentTokenHash' | 'agentTokenEncrypted' | 'agentTokenCreatedAt' | 'status'
      >
    >,
  ): Promise<ComputerEntity> {
    const key = { organizationId: computer.organizationId, id: computer.id };
    await manager.getRepository(ComputerEntity).update(key, { ...changes, updatedAt: () => `GREATEST(updated_at, ${DB_NOW})` });
    return (await manager.getRepository(ComputerEntity).findOneBy(key))!;
  }

  /** Deletes the computer; its steps go with it, sessions are disconnected (foreign keys). */
  /** Whether it was there to delete. */
  async delete(manager: EntityManager, computer: ComputerKey): Promise<boolean> {
    const result = await manager.getRepository(ComputerEntity).delete({ organizationId: computer.organizationId, id: computer.id });
    return (result.affected ?? 0) > 0;
  }

  /** The computer an agent token's hash belongs to, with its owner (`computers_agent_token_hash_key` serves it). */
  async findByTokenHash(tokenHash: string): Promise<TokenComputer | null> {
    const rows = await this.sql.query<TokenComputer>(
      'computers.byToken',
      `SELECT id AS "computerId", organization_id AS "organizationId", owner_id AS "ownerId" FROM computers WHERE agent_token_hash = $1`,
      [tokenHash],
    );
    return rows[0] ?? null;
  }

  /**
   * Managed `local` computers whose agent the server runs (not a worker's): active, with their token kept (encrypted),
   * each with its place among its organization's (oldest first), which LOCAL_AGENTS_PER_ORGANIZATION caps.
   */
  localAgents(): Promise<Array<{ id: string; organizationId: string; agentTokenEncrypted: string; place: number }>> {
    return this.sql.query(
      'computers.localAgents',
      `SELECT id, organization_id AS "organizationId", agent_token_encrypted AS "agentTokenEncrypted",
              row_number() OVER (PARTITION BY organization_id ORDER BY created_at, id)::int AS place
       FROM computers
       WHERE provider = $1 AND status = $2 AND agent_token_encrypted IS NOT NULL AND NOT on_workers ORDER BY created_at, id`,
      [LOCAL_PROVIDER, ComputerStatus.Active],
    );
  }

  /** A computer's provider and its owner (what the computer-kind controls judge), or null. */
  async kindAndOwner(id: string, organizationId: string): Promise<{ provider: string; ownerId: string } | null> {
    const rows = await this.sql.query<{ provider: string; ownerId: string }>(
      'computers.kindAndOwner',
      `SELECT provider, owner_id AS "ownerId" FROM computers WHERE id = $1 AND organization_id = $2`,
      [id, organizationId],
    );
    return rows[0] ?? null;
  }

  /** Whether the computer exists in the organization (and belongs to `ownerId`, when given). */
  async exists(id: string, organizationId: string, ownerId?: string): Promise<boolean> {
    const rows = await this.sql.query(
      ownerId ? 'computers.existsForOwner' : 'computers.exists',
      `SELECT 1 FROM computers WHERE id = $1 AND organization_id = $2${ownerId ? ' AND owner_id = $3' : ''}`,
      ownerId ? [id, organizationId, ownerId] : [id, organizationId],
    );
    return rows.length > 0;
  }

  /**
   * Claims the next step to run, in one transaction: the first unfinished step of a provisioning
   * computer, pending, or running under a claim whose lease ran out (its instance died). Rows
   * other instances are claiming are skipped, so no step is claimed twice. The server's instances take the steps of
   * computers on its host; a worker only those of computers placed on it.
   */
  async claimNext(
    claimant: StepClaimant,
    claimId: string,
    leaseMs: number,
    maxAttempts: number,
    moved: StepMoved,
  ): Promise<{ claimed: ClaimedStep } | { abandoned: ClaimedStep } | null> {
    return this.transaction(async (manager) => {
      const sql = this.sql.in(manager);
      const [name, where, values] =
        claimant.kind === 'server'
          ? ['computers.steps.nextClaimable', 'NOT c.on_workers', []]
          : ['computers.steps.nextClaimable.worker', 'c.organization_id = $1 AND c.worker_id = $2', [claimant.organizationId, claimant.workerId]];
      const [candidate] = await sql.query<{
        organization_id: string;
        computer_id: string;
        position: number;
        attempts: number;
        status: StepStatus;
        claim_id: string | null;
      }>(
        name,
        `SELECT s.organization_id, s.computer_id, s.position, s.attempts, s.status, s.claim_id FROM provisioning_steps s
         JOIN computers c ON c.organization_id = s.organization_id AND c.id = s.computer_id AND c.status = 'provisioning' AND ${where}
         WHERE ((s.status = 'pending' AND NOT EXISTS (
                  SELECT 1 FROM provisioning_steps e
                  WHERE e.organization_id = s.organization_id AND e.computer_id = s.computer_id AND e.position < s.position AND e.status <> 'completed'))
            OR (s.status = 'running' AND s.lease_expires_at < clock_timestamp()))
         ORDER BY c.created_at, s.computer_id, s.position
         LIMIT 1
         FOR UPDATE OF s SKIP LOCKED`,
        values,
      );
      if (!candidate) return null;
      if (candidate.status === StepStatus.Running && candidate.attempts >= maxAttempts) {
        // Abandoning updates the computer while this holds its step: never wait for the computer's lock then (a
        // deletion or a worker's recovery holds it and waits for the step), only take it if it is free.
        const [free] = await sql.query('computers.lockToAbandon', `SELECT 1 FROM computers WHERE organization_id = $1 AND id = $2 FOR UPDATE SKIP LOCKED`, [
          candidate.organization_id,
          candidate.computer_id,
        ]);
        if (!free) return null;
        const error = `Abandoned: ${candidate.attempts} ${claimant.kind === 'server' ? 'instances' : 'runs'} took this step and none finished it (each stopped without a word).`;
        const abandoned = await this.finishStep(
          manager,
          { organizationId: candidate.organization_id, computerId: candidate.computer_id, position: candidate.position, claimId: candidate.claim_id },
          StepStatus.Failed,
          error,
        );
        moved(manager, { ...abandoned!, from: ComputerStatus.Provisioning });
        return { abandoned: abandoned! };
      }
      const [row] = await sql.query<ProvisioningStepEntity>(
        'computers.steps.claim',
        `UPDATE provisioning_steps s SET status = 'running', claim_id = $3, attempts = s.attempts + 1, error = NULL, completed_at = NULL,
           started_at = ${DB_NOW}, lease_expires_at = ${DB_NOW} + $4 * interval '1 millisecond'
         WHERE s.organization_id = $5 AND s.computer_id = $1 AND s.position = $2 RETURNING ${STEP_COLUMNS}`,
        [candidate.computer_id, candidate.position, claimId, leaseMs, candidate.organization_id],
      );
      const computer = (await manager.getRepository(ComputerEntity).findOneBy({ organizationId: candidate.organization_id, id: candidate.computer_id }))!;
      moved(manager, { computer, step: row, from: computer.status });
      return { claimed: { step: row, computer } };
    });
  }

  /** Renews a claim's lease; false when the claim is no longer held (computer deleted, or taken over). */
  async renewClaim(step: StepFence, leaseMs: number): Promise<boolean> {
    const rows = await this.sql.query(
      'computers.steps.renew',
      `UPDATE provisioning_steps SET lease_expires_at = ${DB_NOW} + $4 * interval '1 millisecond'
       WHERE organization_id = $5 AND computer_id = $1 AND position = $2 AND claim_id = $3 AND status = 'running' RETURNING 1`,
      [step.computerId, step.position, step.claimId, leaseMs, step.organizationId],
    );
    return rows.length > 0;
  }

  /**
   * Renews the leases of the claims a worker's heartbeat names, in one statement; answers those no longer its own. A
   * worker renews only steps of computers placed on it, and not past `maxRunMs` from the step's start (a worker that
   * says it is still running a step forever does not hold it forever).
   */
  async renewWorkerClaims(
    worker: { organizationId: string; workerId: string; maxRunMs: number },
    steps: Array<Omit<StepFence, 'organizationId'>>,
    leaseMs: number,
  ): Promise<Array<{ computerId: string; position: number }>> {
    if (steps.length === 0) return [];
    const renewed = await this.sql.query<{ computer_id: string; position: number; claim_id: string }>(
      'computers.steps.renew.worker',
      `UPDATE provisioning_steps s SET lease_expires_at = ${DB_NOW} + $6 * interval '1 millisecond'
       FROM computers c, unnest($3::uuid[], $4::smallint[], $5::uuid[]) AS held(computer_id, position, claim_id)
       WHERE s.organization_id = $1 AND s.computer_id = held.computer_id AND s.position = held.position AND s.claim_id = held.claim_id
         AND s.status = 'running' AND s.started_at > clock_timestamp() - $7 * interval '1 millisecond'
         AND c.organization_id = s.organization_id AND c.id = s.computer_id AND c.worker_id = $2
       RETURNING s.computer_id, s.position, s.claim_id`,
      [
        worker.organizationId,
        worker.workerId,
        steps.map((step) => step.computerId),
        steps.map((step) => step.position),
        steps.map((step) => step.claimId),
        leaseMs,
        worker.maxRunMs,
      ],
    );
    const held = new Set(renewed.map((row) => `${row.computer_id}:${row.position}:${row.claim_id}`));
    return steps
      .filter((step) => !held.has(`${step.computerId}:${step.position}:${step.claimId}`))
      .map(({ computerId, position }) => ({ computerId, position }));
  }

  /**
   * Finishes a claimed step (fenced by its claim): completed, with the computer active when it was
   * the last; or failed, with the computer in error. `lost` when the claim was no longer held.
   * The computer's row is locked first, as a worker's recovery and a deletion lock it (then its steps): finishing
   * the other way round could deadlock with them.
   */
  async finish(
    step: StepFence,
    outcome: { status: StepStatus.Completed; clonedRepoDirectories?: string[] } | { status: StepStatus.Failed; error: string },
    moved: StepMoved,
  ): Promise<FinishOutcome & { activated?: boolean }> {
    return this.transaction(async (manager) => {
      await this.sql
        .in(manager)
        .query('computers.lockForFinish', `SELECT 1 FROM computers WHERE organization_id = $1 AND id = $2 FOR UPDATE`, [step.organizationId, step.computerId]);
      if (outcome.status === StepStatus.Completed && outcome.clonedRepoDirectories) {
        await this.sql.in(manager).query(
          'computers.setCloned',
          `UPDATE computers c SET cloned_repo_directories = $2::jsonb FROM provisioning_steps s
           WHERE c.organization_id = $5 AND c.id = $1 AND s.organization_id = c.organization_id AND s.computer_id = c.id AND s.position = $3
             AND s.claim_id = $4 AND s.status = 'running'`,
          [step.computerId, JSON.stringify(outcome.clonedRepoDirectories), step.position, step.claimId, step.organizationId],
        );
      }
      const result = await this.finishStep(manager, step, outcome.status, outcome.status === StepStatus.Failed ? outcome.error : null);
      if (result) moved(manager, { ...result, from: ComputerStatus.Provisioning });
      return result ? { lost: false, computer: result.computer, activated: result.computer.status === ComputerStatus.Active } : { lost: true };
    });
  }

  /** A running step of a computer placed on this worker, held under this claim; null otherwise. */
  async workerStep(worker: { organizationId: string; workerId: string }, fence: Omit<StepFence, 'organizationId'>): Promise<ProvisioningStepEntity | null> {
    const rows = await this.sql.query<ProvisioningStepEntity>(
      'computers.steps.ofWorker',
      `SELECT ${STEP_COLUMNS} FROM provisioning_steps s JOIN computers c ON c.organization_id = s.organization_id AND c.id = s.computer_id
       WHERE s.organization_id = $1 AND s.computer_id = $2 AND s.position = $3 AND s.claim_id = $4 AND s.status = 'running' AND c.worker_id = $5`,
      [worker.organizationId, fence.computerId, fence.position, fence.claimId, worker.workerId],
    );
    return rows[0] ?? null;
  }

  /** The computers placed on a worker: what it should hold. */
  placedOn(organizationId: string, workerId: string): Promise<Array<Pick<ComputerEntity, 'id' | 'status' | 'agentTokenCreatedAt' | 'agentTokenEncrypted'>>> {
    return this.sql.query(
      'computers.placedOn',
      `SELECT id, status, agent_token_created_at AS "agentTokenCreatedAt", agent_token_encrypted AS "agentTokenEncrypted"
       FROM computers WHERE organization_id = $1 AND worker_id = $2 ORDER BY created_at, id`,
      [organizationId, workerId],
    );
  }

  /** Gives a claim back (its instance is stopping): the step is pending again, for any instance. */
  async release(step: StepFence): Promise<void> {
    await this.sql.query(
      'computers.steps.release',
      `UPDATE provisioning_steps SET status = 'pending', claim_id = NULL, lease_expires_at = NULL, started_at = NULL
       WHERE organization_id = $4 AND computer_id = $1 AND position = $2 AND claim_id = $3 AND status = 'running'`,
      [step.computerId, step.position, step.claimId, step.organizationId],
    );
  }

  /** The provisioning queue, all instances together: steps of provisioning computers waiting (pending) and being run. */
  async queuedSteps(): Promise<{ pending: number; running: number }> {
    const rows = await this.sql.query<{ status: 'pending' | 'running'; n: number }>(
      'computers.steps.queued',
      `SELECT s.status, count(*)::int AS n FROM provisioning_steps s
       JOIN computers c ON c.organization_id = s.organization_id AND c.id = s.computer_id AND c.status = 'provisioning'
       WHERE s.status IN ('pending', 'running') GROUP BY s.status`,
      [],
    );
    const counts = { pending: 0, running: 0 };
    for (const row of rows) counts[row.status] = row.n;
    return counts;
  }

  /** On an embedded database only this process runs the server's steps: any running one is from a previous run (workers hold their own). */
  async releaseAll(): Promise<number> {
    const rows = await this.sql.query(
      'computers.steps.releaseAll',
      `UPDATE provisioning_steps s SET status = 'pending', claim_id = NULL, lease_expires_at = NULL, started_at = NULL
       FROM computers c WHERE c.organization_id = s.organization_id AND c.id = s.computer_id AND NOT c.on_workers AND s.status = 'running' RETURNING 1`,
      [],
    );
    return rows.length;
  }

  /**
   * Retry: the failed step is pending again (later steps never ran), the computer provisioning. One waiting for a worker
   * waits anew: its placement timeout starts again.
   */
  async retry(manager: EntityManager, computer: ComputerKey): Promise<void> {
    const sql = this.sql.in(manager);
    await sql.query(
      'computers.steps.retry',
      `UPDATE provisioning_steps SET status = 'pending', error = NULL, started_at = NULL, completed_at = NULL, attempts = 0,
         claim_id = NULL, lease_expires_at = NULL
       WHERE organization_id = $2 AND computer_id = $1 AND status = 'failed'`,
      [computer.id, computer.organizationId],
    );
    await sql.query(
      'computers.waitAgain',
      `UPDATE computers SET waiting_since = ${DB_NOW} WHERE organization_id = $2 AND id = $1 AND on_workers AND worker_id IS NULL`,
      [computer.id, computer.organizationId],
    );
  }

  private async finishStep(
    manager: EntityManager,
    step: Omit<StepFence, 'claimId'> & { claimId: string | null },
    status: StepStatus.Completed | StepStatus.Failed,
    error: string | null,
  ): Promise<{ step: ProvisioningStepEntity; computer: ComputerEntity } | null> {
    const sql = this.sql.in(manager);
    const [finished] = await sql.query<ProvisioningStepEntity>(
      'computers.steps.finish',
      `UPDATE provisioning_steps s SET status = $4::varchar, error = $5, completed_at = ${DB_NOW}, claim_id = NULL, lease_expires_at = NULL
       WHERE s.organization_id = $6 AND s.computer_id = $1 AND s.position = $2 AND s.status = 'running' AND s.claim_id IS NOT DISTINCT FROM $3::uuid
       RETURNING ${STEP_COLUMNS}`,
      [step.computerId, step.position, step.claimId, status, error, step.organizationId],
    );
    if (!finished) return null;
    const [{ unfinished }] = await sql.query<{ unfinished: number }>(
      'computers.steps.unfinished',
      `SELECT count(*)::int AS unfinished FROM provisioning_steps WHERE organization_id = $2 AND computer_id = $1 AND status <> 'completed'`,
      [step.computerId, step.organizationId],
    );
    const trigger = status === StepStatus.Failed ? ComputerTrigger.StepFailed : unfinished === 0 ? ComputerTrigger.StepsCompleted : null;
    const next = trigger ? nextStatus(trigger, ComputerStatus.Provisioning)! : ComputerStatus.Provisioning;
    await sql.query(
      'computers.setStatus',
      `UPDATE computers SET status = $2, updated_at = GREATEST(updated_at, ${DB_NOW}) WHERE organization_id = $3 AND id = $1 AND status = 'provisioning'`,
      [step.computerId, next, step.organizationId],
    );
    const computer = (await manager.getRepository(ComputerEntity).findOneBy({ organizationId: step.organizationId, id: step.computerId }))!;
    return { step: finished, computer };
  }
}
