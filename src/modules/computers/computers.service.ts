import { Injectable, Logger } from '@nestjs/common';
import { userInfo } from 'node:os';
import type { EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import {
  AccessPolicy,
  Authenticator,
  eventActorOf,
  generateComputerToken,
  isAdmin,
  OrganizationControlsReader,
  OrganizationsService,
  Principal,
  securityActorOf,
} from '../auth';
import { SessionsService } from '../sessions';
import { isUuid, newId } from '../../platform/database/ids';
import { EventLog } from '../../platform/events';
import { ServerDetails } from '../../platform/http/server-details';
import { FieldError, validationError } from '../../platform/http/validation';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { SecretBox } from '../../platform/secrets/secret-box';
import { LocalAgentSupervisor } from './agents/local-agent-supervisor';
import { ComputersRepository } from './computers.repository';
import { agentTokenContext, BYOM, ComputerSource, LOCAL_PROVIDER, LOCAL_TEMPLATES, OwnerPrincipalKind } from './domain/computer';
import { ComputerTrigger, nextStatus } from './domain/computer-status';
import { ComputerQuota, ComputersError, ComputersErrorCode, QuotaExceededError } from './domain/computers.errors';
import { planSteps, STEP_NAMES, StepId, StepStatus } from './domain/provisioning-step';
import { locateRepo } from './domain/repo-location';
import { ComputerShape, ComputerView, toComputerView } from './domain/views';
import { ComputerEntity, ProvisioningStepEntity } from './entities';
import { ProvisioningJob } from './jobs/provisioning.job';
import { ComputeProvider } from './providers/compute-provider';

export interface CreateComputerInput {
  name: string;
  provider: string;
  hostId?: string;
  remoteUser?: string;
  repos?: string[];
  autoInstallDeps?: boolean;
  serviceAccountId?: string;
  source?: ComputerSource;
}

export interface UpdateComputerInput {
  name?: string;
  remoteUser?: string;
}

/** Fields only a managed provider's computer takes. */
const MANAGED_ONLY = ['repos', 'autoInstallDeps', 'source'] as const;

/**
 * The v0 computers API. Owners and managers see and change every computer of the organization,
 * members only their own; guests none (the controller refuses them).
 */
@Injectable()
export class ComputersService {
  private readonly logger = new Logger(ComputersService.name);
  private readonly details: ServerDetails;

  constructor(
    private readonly repository: ComputersRepository,
    private readonly controls: OrganizationControlsReader,
    private readonly sessions: SessionsService,
    private readonly provider: ComputeProvider,
    private readonly authenticator: Authenticator,
    private readonly organizations: OrganizationsService,
    private readonly provisioning: ProvisioningJob,
    private readonly config: AppConfig,
    private readonly box: SecretBox,
    private readonly agents: LocalAgentSupervisor,
    private readonly events: EventLog,
  ) {
    this.details = new ServerDetails(config);
  }

  async create(principal: Principal, input: CreateComputerInput): Promise<ComputerView> {
    const managed = input.provider !== BYOM;
    await this.checkControls(principal, managed);
    const { errors, repos: given } = this.checkModeFields(input, managed);
    if (errors.length > 0) throw validationError(errors);
    const owner = await this.ownerOf(principal, input.serviceAccountId);
    const copied = input.source?.kind === 'computer' ? await this.visible(principal, input.source.computerId, 'source.computerId') : null;
    const repos = given ?? copied?.repos ?? [];
    const autoInstallDeps = input.autoInstallDeps ?? copied?.autoInstallDeps ?? false;
    const now = new Date();
    const { computer, agentToken } = this.newComputer(principal, owner, input, {
      managed,
      repos,
      autoInstallDeps,
      status: nextStatus(managed ? ComputerTrigger.ManagedCreated : ComputerTrigger.ByomRegistered, null)!,
      createdAt: now,
      updatedAt: now,
    });
    const steps = await this.repository.transaction(async (manager) => {
      await this.checkQuotas(manager, principal, { managed, local: input.provider === LOCAL_PROVIDER });
      const planned = managed ? planSteps({ repos, autoInstallDeps }) : [];
      const steps = planned.map((stepId, position) =>
        Object.assign(new ProvisioningStepEntity(), {
          computerId: computer.id,
          position,
          stepId,
          name: STEP_NAMES[stepId],
          status: StepStatus.Pending,
          error: null,
          startedAt: null,
          completedAt: null,
          installSessionId: null as string | null,
          attempts: 0,
          claimId: null,
          leaseExpiresAt: null,
        }),
      );
      await this.repository.insertComputer(manager, computer);
      if (steps.length > 0) {
        const log = await this.sessions.openServerLog(manager, {
          organizationId: computer.organizationId,
          ownerId: computer.ownerId,
          computerId: computer.id,
          title: `Provisioning log: ${computer.name}`,
        });
        for (const step of steps) step.installSessionId = log;
        await this.repository.insertSteps(manager, steps);
      }
      this.raiseCreated(manager, principal, computer);
      return steps;
    });
    const actor = securityActorOf(principal);
    logSecurityEvent('computer.created', actor, { computerId: computer.id, provider: computer.provider });
    logSecurityEvent('computer.agent_token.issued', actor, { computerId: computer.id });
    if (steps.length > 0) this.provisioning.wake();
    return { ...this.view(computer, steps, 'create'), agentToken };
  }

  /**
   * Records a managed computer whose provisioning already ran and failed at `failedStep` with
   * `error` (the demo's): steps before it completed, later ones never ran, the log says so, the
   * computer is in `error`. Nothing is provisioned now; retrying it provisions it for real.
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
    const at = (step: number) => new Date(input.startedAt.getTime() + step * 4_000);
    const { computer } = this.newComputer(principal, owner, input, {
      managed: true,
      repos,
      autoInstallDeps: input.autoInstallDeps ?? false,
      status: nextStatus(ComputerTrigger.StepFailed, nextStatus(ComputerTrigger.ManagedCreated, null))!,
      createdAt: input.startedAt,
      updatedAt: at(failedAt + 1),
    });
    const log = await this.repository.transaction(async (manager) => {
      await this.checkQuotas(manager, principal, { managed: true, local: input.provider === LOCAL_PROVIDER });
      await this.repository.insertComputer(manager, computer);
      const log = await this.sessions.openServerLog(manager, {
        organizationId: computer.organizationId,
        ownerId: computer.ownerId,
        computerId: computer.id,
        title: `Provisioning log: ${computer.name}`,
      });
      await this.repository.insertSteps(
        manager,
        planned.map((stepId, position) => {
          const ran = position <= failedAt;
          return Object.assign(new ProvisioningStepEntity(), {
            computerId: computer.id,
            position,
            stepId,
            name: STEP_NAMES[stepId],
            status: position < failedAt ? StepStatus.Completed : position === failedAt ? StepStatus.Failed : StepStatus.Pending,
            error: position === failedAt ? input.error : null,
            startedAt: ran ? at(position) : null,
            completedAt: ran ? at(position + 1) : null,
            installSessionId: log,
            attempts: ran ? 1 : 0,
            claimId: null,
            leaseExpiresAt: null,
          });
        }),
      );
      this.raiseCreated(manager, principal, computer);
      return log;
    });
    for (const stepId of planned.slice(0, failedAt + 1)) {
      await this.sessions.appendServerLog(computer.organizationId, log, `Step ${stepId} started (attempt 1).`);
      await this.sessions.appendServerLog(computer.organizationId, log, stepId === input.failedStep ? `Step ${stepId} failed: ${input.error}` : `Step ${stepId} completed.`);
    }
    logSecurityEvent('computer.created', securityActorOf(principal), { computerId: computer.id, provider: computer.provider });
    return this.viewWithSteps(computer, 'full');
  }

  async list(principal: Principal): Promise<ComputerView[]> {
    const computers = await this.repository.list(principal.organizationId, isAdmin(principal.role) ? undefined : principal.userId);
    const steps = await this.repository.stepsOf(computers.map((c) => c.id));
    return computers.map((computer) => this.view(computer, steps.get(computer.id)!, 'list'));
  }

  async get(principal: Principal, computerId: string): Promise<ComputerView> {
    const computer = await this.visible(principal, computerId);
    return this.viewWithSteps(computer, 'full');
  }

  async update(principal: Principal, computerId: string, input: UpdateComputerInput): Promise<ComputerView> {
    const updated = await this.repository.transaction(async (manager) => {
      const computer = await this.visible(principal, computerId, undefined, manager);
      return this.repository.update(manager, computer.id, { name: input.name, remoteUser: input.remoteUser });
    });
    return this.viewWithSteps(updated, 'list');
  }

  /** Deletes the computer (its steps, its token) and tears down what its provider made, its agent first. */
  async remove(principal: Principal, computerId: string): Promise<void> {
    const computer = await this.visible(principal, computerId);
    const deleted = await this.repository.transaction(async (manager) => {
      if (!(await this.repository.delete(manager, computer.id))) return false;
      this.events.raise(manager, {
        type: 'computer.deleted',
        organizationId: computer.organizationId,
        actor: eventActorOf(principal),
        data: { computerId: computer.id, name: computer.name, provider: computer.provider, ownerId: computer.ownerId },
      });
      return true;
    });
    // Deleted meanwhile by another request: that one did the rest.
    if (!deleted) throw notFound(computerId);
    logSecurityEvent('computer.deleted', securityActorOf(principal), { computerId: computer.id });
    this.authenticator.forgetComputerToken(computer.agentTokenHash);
    if (computer.provider === BYOM) return;
    // Its agent may run on another instance: that one stops it at its next look at the computers.
    if (computer.provider === LOCAL_PROVIDER) await this.agents.stop(computer.id);
    // The computer is gone either way; a workspace that cannot be removed is the operator's to clean up.
    await this.provider.teardown(computer.id).catch((error: Error) => this.logger.error(`Could not remove the workspace of deleted computer ${computer.id}: ${error.message}`));
  }

  /** Puts a computer in error back to provisioning: its failed step runs again, then the rest. */
  async retry(principal: Principal, computerId: string): Promise<ComputerView> {
    const computer = await this.repository.transaction(async (manager) => {
      // The quotas' lock first, as on create, then the computer's row.
      const usage = await this.repository.lockQuotaUsage(manager, principal.organizationId);
      const locked = await this.visible(principal, computerId, undefined, manager, true);
      const next = nextStatus(ComputerTrigger.Retried, locked.status);
      if (!next) {
        throw new ComputersError(
          ComputersErrorCode.NotFailed,
          `Computer ${computerId} is ${locked.status}; only a computer in error can be retried.`,
          { computerStatus: locked.status },
        );
      }
      if (usage.provisioning >= this.config.PROVISIONING_PER_ORGANIZATION) this.refuse(principal, ComputerQuota.Provisioning);
      await this.repository.retry(manager, locked.id);
      this.events.raise(manager, {
        type: 'computer.status_changed',
        organizationId: locked.organizationId,
        actor: eventActorOf(principal),
        data: { computerId: locked.id, provider: locked.provider, from: locked.status, to: next, step: null },
      });
      return this.repository.update(manager, locked.id, { status: next });
    });
    this.provisioning.wake();
    return this.viewWithSteps(computer, 'full');
  }

  /**
   * A new agent token; the old one stops working at once on this instance, within AUTH_CACHE_MS
   * elsewhere. A local computer's agent is restarted with the new one.
   */
  async rotateToken(principal: Principal, computerId: string): Promise<{ computerId: string; agentToken: string; createdAt: number }> {
    const token = generateComputerToken();
    const now = new Date();
    const previous = await this.repository.transaction(async (manager) => {
      const locked = await this.visible(principal, computerId, undefined, manager, true);
      await this.repository.update(manager, locked.id, {
        agentTokenHash: token.hash,
        agentTokenEncrypted: this.keptToken(locked.provider, locked.id, token.token),
        agentTokenCreatedAt: now,
      });
      return { id: locked.id, hash: locked.agentTokenHash, provider: locked.provider };
    });
    logSecurityEvent('computer.agent_token.issued', securityActorOf(principal), { computerId: previous.id });
    this.authenticator.forgetComputerToken(previous.hash);
    if (previous.provider === LOCAL_PROVIDER) this.agents.wake();
    return { computerId: previous.id, agentToken: token.token, createdAt: now.getTime() };
  }

  /** The computer's agent reports where it runs; only its own token may. */
  async connectAgent(principal: Principal, input: { hostname: string }): Promise<ComputerView> {
    if (principal.credential.kind !== 'computer') {
      throw new ComputersError(ComputersErrorCode.NotComputerCredential, 'Connect with the computer\'s agent token (cpt_…), not an API key or JWT.');
    }
    const { computerId } = principal.credential;
    const updated = await this.repository.transaction(async (manager) => {
      const computer = await this.repository.find(computerId, principal.organizationId, manager, true);
      if (!computer) throw notFound(computerId);
      return this.repository.update(manager, computer.id, { hostname: input.hostname, agentConnectedAt: new Date() });
    });
    return this.viewWithSteps(updated, 'list');
  }

  /**
   * The token as stored beside its hash: encrypted, bound to the computer, for `local` computers
   * only (the server starts their agent with it); null for the rest, whose agents the server never runs.
   */
  private keptToken(provider: string, computerId: string, token: string): string | null {
    return provider === LOCAL_PROVIDER ? this.box.encrypt(token, agentTokenContext(computerId)) : null;
  }

  private raiseCreated(manager: EntityManager, principal: Principal, computer: ComputerEntity): void {
    this.events.raise(manager, {
      type: 'computer.created',
      organizationId: computer.organizationId,
      actor: eventActorOf(principal),
      data: { computerId: computer.id, name: computer.name, provider: computer.provider, ownerId: computer.ownerId, status: computer.status },
    });
  }

  /** The computer if the caller may see it (members: their own); 404 otherwise, whatever the reason. */
  private async visible(principal: Principal, computerId: string, field?: string, manager?: Parameters<ComputersRepository['find']>[2], lock = false): Promise<ComputerEntity> {
    const computer = isUuid(computerId) ? await this.repository.find(computerId, principal.organizationId, manager, lock) : null;
    if (!computer || !AccessPolicy.canWrite(principal, computer)) throw notFound(computerId, field);
    return computer;
  }

  /**
   * The organization's quotas, counted under its quota lock (held until the caller's transaction
   * ends). The lasting ones are checked before provisioning, which frees itself: a refusal names the
   * quota that waiting would not lift.
   */
  private async checkQuotas(manager: EntityManager, principal: Principal, wanted: { managed: boolean; local: boolean }): Promise<void> {
    const usage = await this.repository.lockQuotaUsage(manager, principal.organizationId);
    if (usage.computers >= this.config.COMPUTERS_PER_ORGANIZATION) this.refuse(principal, ComputerQuota.Computers);
    if (wanted.local && usage.local >= this.config.LOCAL_AGENTS_PER_ORGANIZATION) this.refuse(principal, ComputerQuota.LocalAgents);
    if (wanted.managed && usage.provisioning >= this.config.PROVISIONING_PER_ORGANIZATION) this.refuse(principal, ComputerQuota.Provisioning);
  }

  private refuse(principal: Principal, quota: ComputerQuota): never {
    const limit = this.config[quota];
    logSecurityEvent('quota.exceeded', securityActorOf(principal), { quota, limit });
    const detail = {
      [ComputerQuota.Computers]: `Your organization has ${limit} computers, as many as it may have (${quota}); delete one to create another.`,
      [ComputerQuota.LocalAgents]:
        `Your organization has ${limit} managed ${LOCAL_PROVIDER} computers, as many as this server runs agents for (${quota}); delete one to create another.`,
      [ComputerQuota.Provisioning]: `${limit} of your organization's computers are provisioning, as many as may at once (${quota}); try again when one is ready.`,
    }[quota];
    throw new QuotaExceededError(quota, limit, detail);
  }

  /** Enterprise controls: each kind of computer can be switched off, or limited to listed emails. */
  private async checkControls(principal: Principal, managed: boolean): Promise<void> {
    const controls = await this.controls.read(principal.organizationId);
    const [enabled, allowed, kind] = managed
      ? [controls.managedComputersEnabled, controls.managedComputersAllowedEmails, 'Managed']
      : [controls.byomComputersEnabled, controls.byomComputersAllowedEmails, 'BYOM'];
    if (!enabled) {
      throw new ComputersError(ComputersErrorCode.ProviderDisabled, `${kind} computers are turned off for your organization.`, {
        control: managed ? 'managedComputersEnabled' : 'byomComputersEnabled',
      });
    }
    if (allowed.length > 0 && !allowed.some((email) => email.toLowerCase() === principal.email.toLowerCase())) {
      throw new ComputersError(ComputersErrorCode.NotAllowedByControls, `${kind} computers are limited to listed people, and you are not on the list.`, {
        control: managed ? 'managedComputersAllowedEmails' : 'byomComputersAllowedEmails',
      });
    }
  }

  /** What each mode requires and refuses, beyond the schema; `repos` as stored (remote URLs normalized, paths as given). */
  private checkModeFields(input: CreateComputerInput, managed: boolean): { errors: FieldError[]; repos: string[] | undefined } {
    const errors: FieldError[] = [];
    if (!managed) {
      if (input.hostId === undefined) errors.push({ field: 'hostId', message: 'is required for a byom computer: the id of the machine you register' });
      if (input.remoteUser === undefined) errors.push({ field: 'remoteUser', message: 'is required for a byom computer: the user its agent runs as' });
      // Values that ask for nothing (no repos, no install) are harmless; anything else would be silently ignored.
      const asks = { repos: (input.repos ?? []).length > 0, autoInstallDeps: input.autoInstallDeps === true, source: input.source !== undefined };
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

  /** A new computer's row, with a fresh agent token (kept encrypted where the server runs the agent). */
  private newComputer(
    principal: Principal,
    owner: { id: string; kind: OwnerPrincipalKind },
    input: CreateComputerInput,
    fields: { managed: boolean; repos: string[]; autoInstallDeps: boolean; status: ComputerEntity['status']; createdAt: Date; updatedAt: Date },
  ): { computer: ComputerEntity; agentToken: string } {
    const id = newId();
    const token = generateComputerToken();
    const computer = Object.assign(new ComputerEntity(), {
      id,
      organizationId: principal.organizationId,
      ownerId: owner.id,
      ownerPrincipalKind: owner.kind,
      name: input.name,
      provider: input.provider,
      hostId: fields.managed ? newId() : input.hostId!.toLowerCase(),
      remoteUser: input.remoteUser ?? (fields.managed ? serverUser() : null),
      hostname: null,
      repos: fields.repos,
      autoInstallDeps: fields.autoInstallDeps,
      source: normalizedSource(input.source),
      status: fields.status,
      clonedRepoDirectories: [],
      agentTokenHash: token.hash,
      agentTokenEncrypted: this.keptToken(input.provider, id, token.token),
      agentTokenCreatedAt: fields.createdAt,
      agentConnectedAt: null,
      createdAt: fields.createdAt,
      updatedAt: fields.updatedAt,
    });
    return { computer, agentToken: token.token };
  }

  /** The caller, or the service account the computer is created for (owners and managers only). */
  private async ownerOf(principal: Principal, serviceAccountId: string | undefined): Promise<{ id: string; kind: OwnerPrincipalKind }> {
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

  private async viewWithSteps(computer: ComputerEntity, shape: ComputerShape): Promise<ComputerView> {
    return this.view(computer, (await this.repository.stepsOf([computer.id])).get(computer.id)!, shape);
  }

  private view(computer: ComputerEntity, steps: ProvisioningStepEntity[], shape: ComputerShape): ComputerView {
    const base = this.config.baseUrl;
    const view = toComputerView(
      computer,
      steps,
      { agentUrl: `${base}/api/v0/agent`, clientUrl: `${base}/api/v0/sessions?computerId=${computer.id}` },
      shape,
    );
    // A managed computer's repos lie in the server's COMPUTERS_DIR: named, never shown.
    if (view.clonedRepoDirectories) view.clonedRepoDirectories = view.clonedRepoDirectories.map((directory) => this.details.redact(directory));
    return view;
  }
}

function notFound(computerId: string, field?: string): ComputersError {
  return new ComputersError(ComputersErrorCode.ComputerNotFound, `No computer ${computerId} exists in your organization.`, field ? { field } : {});
}

/** Ids as the database prints them (lower case), so responses never echo another spelling. */
function normalizedSource(source: ComputerSource | undefined): ComputerSource | null {
  if (!source) return null;
  return source.kind === 'computer' ? { kind: 'computer', computerId: source.computerId.toLowerCase() } : source;
}

/** The `local` provider's workspaces belong to the user the server runs as. */
function serverUser(): string {
  try {
    return userInfo().username.slice(0, 63) || 'agent';
  } catch {
    return 'agent';
  }
}
