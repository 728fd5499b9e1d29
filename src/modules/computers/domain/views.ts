import type { ApiSchema } from '../../../platform/http/api-schema';
import { ComputerEntity, ProvisioningStepEntity } from '../entities';
import type { PlacementNames } from '../workers/placement';

export type { PlacementNames };

/** The spec's provisioning step; optional fields omitted when unset. */
export type StepView = ApiSchema<'ProvisioningStep'>;

/**
 * The spec's Computer. List and update responses carry the list shape (with `hostname`); the
 * create response adds `hostId`, `clonedRepoDirectories`, `ownerPrincipalKind`, `ownerId` and
 * `computerSource` (and our `agentToken`, shown once); our get-one and retry answer every field.
 */
export type ComputerView = ApiSchema<'Computer'>;

export type ComputerShape = 'list' | 'create' | 'full';

export function toStepView(step: ProvisioningStepEntity, shape: ComputerShape): StepView {
  const view: StepView = { id: step.stepId, name: step.name, status: step.status };
  if (step.error !== null) view.error = step.error;
  if (step.startedAt) view.startedAt = step.startedAt.getTime();
  if (step.completedAt) view.completedAt = step.completedAt.getTime();
  if (step.installSessionId && shape !== 'list') view.installSessionId = step.installSessionId;
  return view;
}

export function toComputerView(
  computer: ComputerEntity,
  steps: ProvisioningStepEntity[],
  relay: { agentUrl: string; clientUrl: string },
  shape: ComputerShape,
  names?: PlacementNames,
): ComputerView {
  const view: ComputerView = {
    id: computer.id,
    name: computer.name,
    providerType: computer.provider,
    createdAt: computer.createdAt.getTime(),
  };
  if (shape !== 'create' && computer.hostname) view.hostname = computer.hostname;
  if (shape !== 'list' && computer.hostId) view.hostId = computer.hostId;
  view.status = computer.status;
  if (steps.length > 0) view.provisioningSteps = steps.map((step) => toStepView(step, shape));
  view.relayClientUrl = relay.clientUrl;
  view.relayAgentUrl = relay.agentUrl;
  if (computer.remoteUser) view.remoteUser = computer.remoteUser;
  if (shape !== 'list') {
    view.clonedRepoDirectories = computer.clonedRepoDirectories;
    view.ownerPrincipalKind = computer.ownerPrincipalKind;
    view.ownerId = computer.ownerId;
    if (computer.source) view.computerSource = computer.source;
  }
  if (computer.provider !== 'byom') Object.assign(view, placementView(computer, names));
  return view;
}

/** Where a managed computer may run (`placement`, when created for pools) and where it runs now (`runsOn`). */
function placementView(computer: ComputerEntity, names: PlacementNames | undefined): Pick<ComputerView, 'placement' | 'runsOn'> {
  if (!computer.onWorkers) return { runsOn: { kind: 'server' } };
  const poolName = (id: string | null) => (id ? (names?.pools.get(id) ?? null) : null);
  const placement = { poolId: computer.poolId, poolName: poolName(computer.poolId), labels: computer.placementLabels };
  if (!computer.workerId) return { placement, runsOn: { kind: 'waiting', since: (computer.waitingSince ?? computer.updatedAt).getTime() } };
  // Forgotten meanwhile (a week after it ended): named by its id alone.
  const worker = names?.workers.get(computer.workerId) ?? { name: computer.workerId, poolId: computer.poolId ?? '', poolName: poolName(computer.poolId) ?? '' };
  return { placement, runsOn: { kind: 'worker', workerId: computer.workerId, workerName: worker.name, poolId: worker.poolId, poolName: worker.poolName } };
}
