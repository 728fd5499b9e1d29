import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { AccessPolicy, Authenticator, eventActorOf, isAdmin, OrganizationControlsReader, OrganizationsService, Principal, securityActorOf } from '../auth';
import { ServerLogs } from '../sessions';
import { isUuid, newId } from '../../platform/database/ids';
import { EventLog } from '../../platform/events';
import { ServerDetails } from '../../platform/http/server-details';
import { FieldError, validationError } from '../../platform/http/validation';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { AgentTokens } from './agent-tokens.service';
import { LocalAgentSupervisor } from './agents/local-agent-supervisor';
import { ComputersRepository } from './computers.repository';
import { BYOM, LOCAL_PROVIDER, LOCAL_TEMPLATES, OwnerPrincipalKind } from './domain/computer';
import { ComputerTrigger, nextStatus } from './domain/computer-status';
import { ComputerQuota, computerNotFound, ComputersError, ComputersErrorCode, QuotaExceededError, workerPoolNotFound } from './domain/computers.errors';
import { kindRefusal } from './domain/kind-controls';
import { ComputerOwner, CreateComputerInput, newComputer, newStep, Placement } from './domain/new-computer';
import { planSteps, StepId, StepStatus } from './domain/provisioning-step';
import { locateRepo } from '../../host/repo-location';
import { ComputerShape, ComputerView, PlacementNames, toComputerView } from './domain/views';
import { ComputerEntity, ProvisioningStepEntity } from './entities';
import { ProvisioningJob } from './jobs/provisioning.job';
import { ComputeProvider } from './providers/compute-provider';
import { WorkerPoolsService } from './workers/worker-pools.service';
import { WorkerSweepJob } from './workers/worker-sweep.job';
import { WorkersRepository } from './workers/workers.repository';

export type UpdateComputerInput = ApiSchema<'UpdateComputerBody'>;
export type RotatedAgentToken = ApiSchema<'RotatedAgentToken'>;

/** Fields only a managed provider's computer takes. */
const MANAGED_ONLY = ['repos', 'autoInstallDeps', 'source', 'pool', 'labels'] as const;

/** Steps of a recorded failure are this far apart. */
const STEP_MS = 4_000;

type QuotaUsage = Awaited<ReturnType<ComputersRepository['lockQuotaUsage']>>;

/**
 * A computer's lifecycle, as the Computers API offers it: create, read, change, delete, retry its
 * provisioning, replace its agent token, and who may see it (owners and managers every computer of
 * the organization, members their own). The steps themselves are the provisioning job's.
 */
@Injectable()
export class ComputersService {
  private readonly logger = new Logger(ComputersService.name);
  private readonly details: ServerDetails;

  constructor(
    private readonly repository: ComputersRepository,
    private readonly controls: OrganizationControlsReader,
    private readonly organizations: OrganizationsService,
    private readonly tokens: AgentTokens,
    private readonly logs: ServerLogs,
    private readonly events: EventLog,
    private readonly provisioning: ProvisioningJob,
    private readonly authenticator: Authenticator,
    private readonly agents: LocalAgentSupervisor,
    private readonly provider: ComputeProvider,
    private readonly pools: WorkerPoolsService,
    private readonly workers: WorkersRepository,
    private readonly placement: WorkerSweepJob,
    private readonly config: AppConfig,
  ) {
    this.details = new ServerDetails(config);
  }

  /**
   * Registers a BYOM machine (active at once) or creates a managed one (provisioning, its steps run
   * by the provisioning job). The answer carries the agent token, this once.
   */
  async create(principal: Principal, input: CreateComputerInput): Promise<ComputerView> {
    const managed = input.provider !== BYOM;
    await this.checkControls(principal, managed);
    const { errors, repos: given } = this.checkModeFields(input, managed);
    if (errors.length > 0) throw validationError(errors);
    const owner = await this.ownerOf(principal, input.serviceAccountId);
    const copied = input.source?.kind === 'computer' ? await this.visible(principal, input.source.computerId, { field: 'source.computerId' }) : null;
    const repos = given ?? copied?.repos ?? [];
    const autoInstallDeps = input.autoInstallDeps ?? copied?.autoInstallDeps ?? false;
    const placement = managed ? await this.placementOf(principal, input, copied) : null;
    const id = newId();
    const token = this.tokens.issue(input.provider, id);
    const now = new Date();
    const computer = newComputer(id, principal, owner, input, token, {
      managed,
      repos,
      autoInstallDeps,
      status: nextStatus(managed ? ComputerTrigger.ManagedCreated : ComputerTrigger.ByomRegistered, null)!,
      createdAt: now,
      updatedAt: now,
      placement,
    });
    const steps = managed ? planSteps({ repos, autoInstallDeps }).map((stepId, position) => newStep(id, stepId, position)) : [];
    await this.store(principal, computer, steps);
    const actor = securityActorOf(principal);
    logSecurityEvent('computer.created', actor, { computerId: computer.id, provider: computer.provider });
    logSecurityEvent('computer.agent_token.issued', actor, { computerId: computer.id });
    if (placement) this.placement.wake();
    else if (steps.length > 0) this.provisioning.wake();
    return { ...(await this.views([computer], new Map([[computer.id, steps]]), 'create'))[0], agentToken: token.token };
  }

  /**
   * Records a managed computer whose provisioning already ran and failed (the demo's): steps before
   * the failed one completed, later ones never ran, the log says so, the computer is in `error`.
   * Nothing is provisioned now; retrying it provisions it for real.
   */
  async recordFailedProvisioning(
    principal: Principal,
    input: CreateComputerInput & { failedStep: StepId; error: string; startedAt: Date },
  ): Promise<ComputerView> {
    const { errors, repos = [] } = this.checkModeFields(input, true);
    if (input.provider === BYOM) errors.push({ field: 'provider', message: 'a byom computer has no provisioning to fail' });
    if (errors.length > 0) throw validationError(errors);
    const owner = await this.ownerOf(principal, input.serviceAccountId);
    const planned = planSteps({ repos, autoInstallDeps: input.autoInstallDeps ?? false });
    const failedAt = planned.indexOf(input.failedStep);
    if (failedAt < 0) throw validationError([{ field: 'failedStep', message: `is not a step of this computer (${planned.join(', ')})` }]);
    const at = (step: number) => new Date(input.startedAt.getTime() + step * STEP_MS);
    const id = newId();
    const computer = newComputer(id, principal, owner, input, this.tokens.issue(input.provider, id), {
      managed: true,
      repos,
      autoInstallDeps: input.autoInstallDeps ?? false,
      status: nextStatus(ComputerTrigger.StepFailed, nextStatus(ComputerTrigger.ManagedCreated, null))!,
      createdAt: input.startedAt,
      updatedAt: at(failedAt + 1),
    });
    const steps = planned.map((stepId, position) => {
      const ran = position <= failedAt;
      return newStep(id, stepId, position, {
        status: position < failedAt ? StepStatus.Completed : position === failedAt ? StepStatus.Failed : StepStatus.Pending,
        error: position === failedAt ? input.error : null,
        startedAt: ran ? at(position) : null,
        completedAt: ran ? at(position + 1) : null,
        attempts: ran ? 1 : 0,
      });
    });
    const log = (await this.store(principal, computer, steps))!;
    for (const stepId of planned.slice(0, failedAt + 1)) {
      await this.logs.append(computer.organizationId, log, `Step ${stepId} started (attempt 1).`);
      await this.logs.append(computer.organizationId, log, stepId === input.failedStep ? `Step ${stepId} failed: ${input.error}` : `Step ${stepId} completed.`);
    }
    logSecurityEvent('computer.created', securityActorOf(principal), { computerId: computer.id, provider: computer.provider });
    return this.withSteps(computer, 'full');
  }

  async list(principal: Principal): Promise<ComputerView[]> {
    const computers = await this.repository.list(principal.organizationId, isAdmin(principal.role) ? undefined : principal.userId);
    const steps = await this.repository.stepsOf(
      principal.organizationId,
      computers.map((c) => c.id),
    );
    return this.views(computers, steps, 'list');
  }

  async get(principal: Principal, computerId: string): Promise<ComputerView> {
    return this.withSteps(await this.visible(principal, computerId), 'full');
  }

  /** A person renames it or changes its remote user. */
  async update(principal: Principal, computerId: string, input: UpdateComputerInput): Promise<ComputerView> {
    const updated = await this.repository.transaction(async (manager) => {
      const computer = await this.visible(principal, computerId, { manager });
      return this.repository.update(manager, computer, { name: input.name, remoteUser: input.remoteUser });
    });
    return this.withSteps(updated, 'list');
  }

  /** Deletes a computer (its steps, its token) and tears down what its provider made, its agent first. */
  async remove(principal: Principal, computerId: string): Promise<void> {
    const computer = await this.visible(principal, computerId);
    const deleted = await this.repository.transaction(async (manager) => {
      if (!(await this.repository.delete(manager, computer))) return false;
      this.events.raise(manager, {
        type: 'computer.deleted',
        organizationId: computer.organizationId,
        actor: eventActorOf(principal),
        data: { computerId: computer.id, name: computer.name, provider: computer.provider, ownerId: computer.ownerId },
      });
      return true;
    });
    // Deleted meanwhile by another request: that one did the rest.
    if (!deleted) throw computerNotFound(computerId);
    logSecurityEvent('computer.deleted', securityActorOf(principal), { computerId: computer.id });
    this.authenticator.forgetComputerToken(computer.agentTokenHash);
    // A worker's computer: its worker stops the agent and removes the workspace when it learns of the deletion.
    if (computer.provider === BYOM || computer.onWorkers) return;
    // Its agent may run on another instance: that one stops it at its next look at the computers.
    if (computer.provider === LOCAL_PROVIDER) await this.agents.stop(computer.id);
    // The computer is gone either way; a workspace that cannot be removed is the operator's to clean up.
    await this.provider
      .teardown(computer.id)
      .catch((error: Error) => this.logger.error(`Could not remove the workspace of deleted computer ${computer.id}: ${error.message}`));
  }

  /** Puts a computer in error back to provisioning: its failed step runs again, then the rest. */
  async retry(principal: Principal, computerId: string): Promise<ComputerView> {
    const computer = await this.repository.transaction(async (manager) => {
      // The quotas' lock first, as on create, then the computer's row.
      const usage = await this.repository.lockQuotaUsage(manager, principal.organizationId);
      const locked = await this.visible(principal, computerId, { manager, lock: true });
      const next = nextStatus(ComputerTrigger.Retried, locked.status);
      if (!next) {
        throw new ComputersError(ComputersErrorCode.NotFailed, `Computer ${computerId} is ${locked.status}; only a computer in error can be retried.`, {
          computerStatus: locked.status,
        });
      }
      this.checkProvisioningQuota(principal, usage);
      await this.repository.retry(manager, locked);
      this.events.raise(manager, {
        type: 'computer.status_changed',
        organizationId: locked.organizationId,
        actor: eventActorOf(principal),
        data: { computerId: locked.id, provider: locked.provider, from: locked.status, to: next, step: null },
      });
      return this.repository.update(manager, locked, { status: next });
    });
    if (computer.onWorkers) this.placement.wake();
    else this.provisioning.wake();
    return this.withSteps(computer, 'full');
  }

  /**
   * A new agent token; the old one stops working at once on this instance, within AUTH_CACHE_MS
   * elsewhere. A local computer's agent is restarted with the new one.
   */
  async rotateAgentToken(principal: Principal, computerId: string): Promise<RotatedAgentToken> {
    const now = new Date();
    const { previous, token } = await this.repository.transaction(async (manager) => {
      const locked = await this.visible(principal, computerId, { manager, lock: true });
      const token = this.tokens.issue(locked.provider, locked.id);
      await this.repository.update(manager, locked, { agentTokenHash: token.hash, agentTokenEncrypted: token.encrypted, agentTokenCreatedAt: now });
      return { previous: { id: locked.id, hash: locked.agentTokenHash, provider: locked.provider }, token };
    });
    logSecurityEvent('computer.agent_token.issued', securityActorOf(principal), { computerId: previous.id });
    this.authenticator.forgetComputerToken(previous.hash);
    if (previous.provider === LOCAL_PROVIDER) this.agents.wake();
    return { computerId: previous.id, agentToken: token.token, createdAt: now.getTime() };
  }

  /** The computer's agent reports where it runs; only its own token may. */
  async connectAgent(principal: Principal, input: { hostname: string }): Promise<ComputerView> {
    if (principal.credential.kind !== 'computer') {
      throw new ComputersError(ComputersErrorCode.NotComputerCredential, "Connect with the computer's agent token (cpt_…), not an API key or JWT.");
    }
    const { computerId } = principal.credential;
    const updated = await this.repository.transaction(async (manager) => {
      const computer = await this.repository.find(computerId, principal.organizationId, manager, true);
      if (!computer) throw computerNotFound(computerId);
      return this.repository.update(manager, computer, { hostname: input.hostname, agentConnectedAt: new Date() });
    });
    return this.withSteps(updated, 'list');
  }

  /**
   * The computer if the caller may see it; 404 otherwise, whatever the reason. `field` names the
   * request field that gave the id; `manager` and `lock` read it in (and lock it for) a transaction.
   */
  private async visible(
    principal: Principal,
    computerId: string,
    options: { field?: string; manager?: EntityManager; lock?: boolean } = {},
  ): Promise<ComputerEntity> {
    const computer = isUuid(computerId) ? await this.repository.find(computerId, principal.organizationId, options.manager, options.lock ?? false) : null;
    if (!computer || !AccessPolicy.canWrite(principal, computer)) throw computerNotFound(computerId, options.field);
    return computer;
  }

  /** Enterprise controls: each kind of computer can be switched off, or limited to listed emails. */
  private async checkControls(principal: Principal, managed: boolean): Promise<void> {
    const refusal = kindRefusal(await this.controls.read(principal.organizationId), managed, principal.email);
    if (!refusal) return;
    const [code, detail] =
      refusal.reason === 'disabled'
        ? [ComputersErrorCode.ProviderDisabled, refusal.detail]
        : [ComputersErrorCode.NotAllowedByControls, `${refusal.detail}, and you are not on the list.`];
    throw new ComputersError(code, detail, { control: refusal.control });
  }

  /** What each mode requires and refuses, beyond the schema; `repos` as stored (remote URLs normalized, paths as given). */
  private checkModeFields(input: CreateComputerInput, managed: boolean): { errors: FieldError[]; repos: string[] | undefined } {
    const errors: FieldError[] = [];
    if (!managed) {
      if (input.hostId === undefined) errors.push({ field: 'hostId', message: 'is required for a byom computer: the id of the machine you register' });
      if (input.remoteUser === undefined) errors.push({ field: 'remoteUser', message: 'is required for a byom computer: the user its agent runs as' });
      // Values that ask for nothing (no repos, no install) are harmless; anything else would be silently ignored.
      const asks = {
        repos: (input.repos ?? []).length > 0,
        autoInstallDeps: input.autoInstallDeps === true,
        source: input.source !== undefined,
        pool: input.pool !== undefined,
        labels: (input.labels ?? []).length > 0,
      };
      for (const field of MANAGED_ONLY) {
        if (asks[field]) errors.push({ field, message: 'is for managed computers; a byom machine is already set up' });
      }
      return { errors, repos: input.repos };
    }
    if (input.hostId !== undefined) errors.push({ field: 'hostId', message: `is for byom computers; the ${input.provider} provider assigns its own` });
    const repos = input.repos?.map((repo, i) => {
      const location = locateRepo(repo, this.config.localReposDir);
      if ('error' in location) errors.push({ field: `repos[${i}]`, message: location.error });
      return 'kind' in location && location.kind === 'remote' ? location.url : repo;
    });
    if (input.source?.kind === 'template' && input.provider === LOCAL_PROVIDER && !(LOCAL_TEMPLATES as readonly string[]).includes(input.source.templateId)) {
      errors.push({ field: 'source.templateId', message: `is not a template of the ${LOCAL_PROVIDER} provider (it offers: ${LOCAL_TEMPLATES.join(', ')})` });
    }
    return { errors, repos };
  }

  /** The caller, or the service account the computer is created for (owners and managers only). */
  private async ownerOf(principal: Principal, serviceAccountId: string | undefined): Promise<ComputerOwner> {
    if (serviceAccountId === undefined) return { id: principal.userId, kind: OwnerPrincipalKind.User };
    serviceAccountId = serviceAccountId.toLowerCase();
    if (!isAdmin(principal.role)) {
      throw new ComputersError(ComputersErrorCode.ReadOnlyRole, 'Only owners and managers may create computers for a service account.');
    }
    // A person of the organization is no service account: the same 404 as an unknown id or another organization's user.
    if (!isUuid(serviceAccountId) || !(await this.organizations.isServiceAccount(principal.organizationId, serviceAccountId))) {
      throw new ComputersError(ComputersErrorCode.ServiceAccountNotFound, `No service account ${serviceAccountId} exists in your organization.`, {
        field: 'serviceAccountId',
      });
    }
    return { id: serviceAccountId, kind: OwnerPrincipalKind.ServiceAccount };
  }

  /**
   * Stores a new computer in one transaction, or nothing: under the organization's quotas, its row,
   * its provisioning steps with the session that logs them, and `computer.created`. Answers the
   * provisioning log's session id, null when there are no steps (BYOM).
   */
  private store(principal: Principal, computer: ComputerEntity, steps: ProvisioningStepEntity[]): Promise<string | null> {
    return this.repository.transaction(async (manager) => {
      await this.checkNewComputerQuotas(manager, principal, {
        managed: computer.provider !== BYOM,
        local: computer.provider === LOCAL_PROVIDER && !computer.onWorkers,
      });
      // Held until the computer is in: a pool deleted meanwhile is 404 here, never a computer in a pool that is gone.
      if (computer.poolId && !(await this.repository.holdPool(manager, computer.organizationId, computer.poolId))) {
        throw workerPoolNotFound(computer.poolId, 'pool');
      }
      await this.repository.insertComputer(manager, computer);
      let log: string | null = null;
      if (steps.length > 0) {
        log = await this.logs.open(manager, {
          organizationId: computer.organizationId,
          ownerId: computer.ownerId,
          computerId: computer.id,
          title: `Provisioning log: ${computer.name}`,
        });
        for (const step of steps) Object.assign(step, { organizationId: computer.organizationId, installSessionId: log });
        await this.repository.insertSteps(manager, steps);
      }
      this.events.raise(manager, {
        type: 'computer.created',
        organizationId: computer.organizationId,
        actor: eventActorOf(principal),
        data: { computerId: computer.id, name: computer.name, provider: computer.provider, ownerId: computer.ownerId, status: computer.status },
      });
      return log;
    });
  }

  /**
   * Refuses one more computer of this kind, counted under the organization's quota lock (held until the
   * transaction ends) so two requests never both take the last slot. The lasting quotas are checked before
   * provisioning, which frees itself: a refusal names the quota that waiting would not lift.
   */
  private async checkNewComputerQuotas(manager: EntityManager, principal: Principal, wanted: { managed: boolean; local: boolean }): Promise<void> {
    const usage = await this.repository.lockQuotaUsage(manager, principal.organizationId);
    if (usage.computers >= this.config.COMPUTERS_PER_ORGANIZATION) this.refuseQuota(principal, ComputerQuota.Computers);
    if (wanted.local && usage.local >= this.config.LOCAL_AGENTS_PER_ORGANIZATION) this.refuseQuota(principal, ComputerQuota.LocalAgents);
    if (wanted.managed) this.checkProvisioningQuota(principal, usage);
  }

  /** Refuses one more computer provisioning at once. */
  private checkProvisioningQuota(principal: Principal, usage: QuotaUsage): void {
    if (usage.provisioning >= this.config.PROVISIONING_PER_ORGANIZATION) this.refuseQuota(principal, ComputerQuota.Provisioning);
  }

  private refuseQuota(principal: Principal, quota: Exclude<ComputerQuota, ComputerQuota.WorkerPools | ComputerQuota.Workers>): never {
    const limit = this.config[quota];
    logSecurityEvent('quota.exceeded', securityActorOf(principal), { quota, limit });
    const detail = {
      [ComputerQuota.Computers]: `Your organization has ${limit} computers, as many as it may have (${quota}); delete one to create another.`,
      [ComputerQuota.LocalAgents]: `Your organization has ${limit} managed ${LOCAL_PROVIDER} computers, as many as this server runs agents for (${quota}); delete one to create another.`,
      [ComputerQuota.Provisioning]: `${limit} of your organization's computers are provisioning, as many as may at once (${quota}); try again when one is ready.`,
    }[quota];
    throw new QuotaExceededError(quota, limit, detail);
  }

  /** The computer's view with its provisioning steps as stored now. */
  private async withSteps(computer: ComputerEntity, shape: ComputerShape): Promise<ComputerView> {
    return (await this.views([computer], await this.repository.stepsOf(computer.organizationId, [computer.id]), shape))[0];
  }

  /** Computers' views, with the names of the pools and workers they run on (one query, only when any runs on one). */
  private async views(computers: ComputerEntity[], steps: Map<string, ProvisioningStepEntity[]>, shape: ComputerShape): Promise<ComputerView[]> {
    const onWorkers = computers.filter((computer) => computer.onWorkers);
    const names =
      onWorkers.length > 0
        ? await this.workers.names(
            onWorkers[0].organizationId,
            onWorkers.map((c) => c.poolId).filter((id): id is string => id !== null),
            onWorkers.map((c) => c.workerId).filter((id): id is string => id !== null),
          )
        : undefined;
    return computers.map((computer) => this.view(computer, steps.get(computer.id) ?? [], shape, names));
  }

  private view(computer: ComputerEntity, steps: ProvisioningStepEntity[], shape: ComputerShape, names?: PlacementNames): ComputerView {
    const base = this.config.baseUrl;
    const view = toComputerView(
      computer,
      steps,
      { agentUrl: `${base}/api/v0/agent`, clientUrl: `${base}/api/v0/sessions?computerId=${computer.id}` },
      shape,
      names,
    );
    // A managed computer's repos lie in the server's COMPUTERS_DIR: named, never shown.
    if (view.clonedRepoDirectories) view.clonedRepoDirectories = view.clonedRepoDirectories.map((directory) => this.details.redact(directory));
    return view;
  }

  /**
   * Where a new managed computer asks to run: the pool it names (404 when the organization has none of that name or
   * id) and its labels; a copy keeps its source's unless the body gives them. Null: the server's host.
   */
  private async placementOf(principal: Principal, input: CreateComputerInput, copied: ComputerEntity | null): Promise<Placement | null> {
    if (input.pool === undefined && (input.labels ?? []).length === 0) {
      return copied?.onWorkers ? { poolId: copied.poolId, labels: copied.placementLabels } : null;
    }
    const poolId = input.pool !== undefined ? (await this.pools.find(principal.organizationId, input.pool, 'pool')).id : null;
    return { poolId, labels: input.labels ?? [] };
  }
}
