import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { isAdmin, OrganizationControlsReader, OrganizationsService, Principal } from '../auth';
import { isUuid } from '../../platform/database/ids';
import { FieldError, validationError } from '../../platform/http/validation';
import { ComputerAccess } from './computer-access.service';
import { BYOM, LOCAL_PROVIDER, LOCAL_TEMPLATES, OwnerPrincipalKind } from './domain/computer';
import { ComputersError, ComputersErrorCode } from './domain/computers.errors';
import { ComputerOwner, CreateComputerInput } from './domain/new-computer';
import { kindRefusal } from './domain/kind-controls';
import { locateRepo } from './domain/repo-location';

/** Fields only a managed provider's computer takes. */
const MANAGED_ONLY = ['repos', 'autoInstallDeps', 'source'] as const;

/** What a create request settles, once every rule allows it. */
export interface AdmittedComputer {
  managed: boolean;
  owner: ComputerOwner;
  repos: string[];
  autoInstallDeps: boolean;
}

/** The rules a new computer must pass before anything is stored: enterprise controls, each mode's fields, its owner, its source. */
@Injectable()
export class ComputerCreationPolicy {
  constructor(
    private readonly controls: OrganizationControlsReader,
    private readonly organizations: OrganizationsService,
    private readonly access: ComputerAccess,
    private readonly config: AppConfig,
  ) {}

  async admit(principal: Principal, input: CreateComputerInput): Promise<AdmittedComputer> {
    const managed = input.provider !== BYOM;
    await this.checkControls(principal, managed);
    const { errors, repos: given } = this.checkModeFields(input, managed);
    if (errors.length > 0) throw validationError(errors);
    const owner = await this.ownerOf(principal, input.serviceAccountId);
    const copied = input.source?.kind === 'computer' ? await this.access.visible(principal, input.source.computerId, { field: 'source.computerId' }) : null;
    return {
      managed,
      owner,
      repos: given ?? copied?.repos ?? [],
      autoInstallDeps: input.autoInstallDeps ?? copied?.autoInstallDeps ?? false,
    };
  }

  /** What each mode requires and refuses, beyond the schema; `repos` as stored (remote URLs normalized, paths as given). */
  checkModeFields(input: CreateComputerInput, managed: boolean): { errors: FieldError[]; repos: string[] | undefined } {
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

  /** The caller, or the service account the computer is created for (owners and managers only). */
  async ownerOf(principal: Principal, serviceAccountId: string | undefined): Promise<ComputerOwner> {
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
}
