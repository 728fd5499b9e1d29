import type { ApiSchema } from '../../../platform/http/api-schema';
import { answerObject as object, closedObject, displayName, SchemaObject, SchemaRegistry, unixMs, uuidString } from '../../../platform/http/json-schema';
import { pageOf, pageQuery } from '../../../platform/http/pagination';
import { MAX_COMPUTERS_PER_WORKER, WORKER_STATUSES } from './worker';

/** A pool's name: lower-case letters, digits and -, at most 63. */
export const POOL_NAME_PATTERN = '^[a-z0-9][a-z0-9-]{0,62}$';

const poolName: SchemaObject = {
  type: 'string',
  pattern: POOL_NAME_PATTERN,
  'x-problem': 'must be lower-case letters, digits and -, at most 63, starting with a letter or digit',
  description: 'Lower-case letters, digits and -, at most 63; unique in the organization. A computer names its pool by this name or by id.',
  example: 'gpu-lab',
};
const description: SchemaObject = { type: 'string', nullable: true, maxLength: 500, description: 'What the pool is for; `null` clears it.' };
const maxComputersPerWorker: SchemaObject = {
  type: 'integer',
  nullable: true,
  minimum: 1,
  maximum: MAX_COMPUTERS_PER_WORKER,
  description: `At most this many computers on any one worker of the pool, whatever capacity the worker reports; \`null\`: what it reports (at most ${MAX_COMPUTERS_PER_WORKER}). Applies to workers registering from now on.`,
};
const allowUnsandboxed: SchemaObject = {
  type: 'boolean',
  description:
    'Whether a worker that runs computers without the bubblewrap sandbox (`LOCAL_SANDBOX=off` on its machine) may register. Off (the default): it is refused (403 `worker_sandbox_required`).',
};
const MIB_LIMIT = 2 ** 31;
const count = (maximum: number, description: string): SchemaObject => ({ type: 'integer', minimum: 1, maximum, description });
const amount = (description: string): SchemaObject => ({ type: 'integer', minimum: 0, maximum: MIB_LIMIT, description });
/** A worker's label, which computers name to be placed on a worker that has it. */
export const WORKER_LABEL: SchemaObject = {
  type: 'string',
  pattern: '^[a-z0-9][a-z0-9._=/-]{0,62}$',
  'x-problem': 'must be lower-case letters, digits and . _ = / -, at most 63, starting with a letter or digit',
};
/** A step a worker claimed, named as its claim fences it. */
const stepFence = closedObject(['computerId', 'position', 'claimId'], {
  computerId: uuidString(),
  position: { type: 'integer', minimum: 0, maximum: 16 },
  claimId: uuidString(),
}) as SchemaObject & { properties: Record<string, SchemaObject> };
const hostname: SchemaObject = {
  type: 'string',
  minLength: 1,
  maxLength: 253,
  pattern: '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$',
  description: "The machine's host name (RFC 1123).",
};
const capacity = {
  computers: count(
    MAX_COMPUTERS_PER_WORKER,
    `Computers it can hold at once (1 to ${MAX_COMPUTERS_PER_WORKER}; the pool's \`maxComputersPerWorker\` lowers it).`,
  ),
  cpus: count(1024, 'CPUs of the machine.'),
  memoryMb: count(MIB_LIMIT, 'Memory of the machine, MiB.'),
  diskMb: count(MIB_LIMIT, 'Disk free for workspaces, MiB.'),
};
const usage = {
  cpuPercent: { type: 'number', minimum: 0, maximum: 102_400, description: 'CPU in use, percent of one CPU (so up to 100 × cpus).' },
  memoryMb: amount('Memory in use, MiB.'),
  diskMb: amount('Disk used by workspaces, MiB.'),
};

const createdBy: SchemaObject = { ...uuidString('Who created it; `null`: the operator (CLI).'), nullable: true };

const pool = {
  id: uuidString(),
  name: { type: 'string' },
  description: { type: 'string', nullable: true },
  maxComputersPerWorker: { type: 'integer', nullable: true },
  allowUnsandboxed: { type: 'boolean' },
  createdBy,
  createdAt: unixMs(),
  updatedAt: unixMs(),
};
const enrollmentToken = {
  id: uuidString(),
  poolId: uuidString(),
  name: { type: 'string' },
  prefix: { type: 'string', description: 'The first characters of the token, to recognise it.', example: 'wkt_Q2xq8PzT' },
  createdBy,
  createdAt: unixMs(),
  lastUsedAt: unixMs('Unix ms: the last registration with it.', true),
  expiresAt: unixMs('Unix ms; an expired token registers no worker.', true),
  revokedAt: unixMs('Unix ms; a revoked token registers no worker.', true),
};

/** Worker pools and their enrollment tokens: request bodies and query strings (validated by Ajv) and answers, published as they are. */
export const workerPoolSchemas = new SchemaRegistry('worker-pools').add({
  WorkerPoolView: object(pool),
  WorkerPoolListView: pageOf('workerPools', 'WorkerPoolView'),
  EnrollmentTokenView: object(enrollmentToken),
  CreatedEnrollmentTokenView: object({
    ...enrollmentToken,
    token: {
      type: 'string',
      description: 'The token itself, for `agent-platform worker` (`WORKER_TOKEN_FILE` or `WORKER_TOKEN`). Shown only in this answer: store it now.',
      example: 'wkt_Q2xq8PzT...',
    },
  }),
  EnrollmentTokenListView: pageOf('enrollmentTokens', 'EnrollmentTokenView'),
  CreateWorkerPoolBody: closedObject(['name'], {
    name: poolName,
    description,
    maxComputersPerWorker,
    allowUnsandboxed: { ...allowUnsandboxed, default: false },
  }),
  UpdateWorkerPoolBody: {
    ...closedObject([], { name: poolName, description, maxComputersPerWorker, allowUnsandboxed }),
    minProperties: 1,
    description: 'At least one field.',
  },
  CreateEnrollmentTokenBody: closedObject(['name'], {
    name: displayName('a name for the token (which machines use it)', 100, 'rack 2'),
    expiresAt: {
      type: 'string',
      format: 'date-time',
      description: 'When the token stops registering workers (ISO 8601, in the future). Omit for one that lasts until revoked.',
      example: '2027-01-01T00:00:00Z',
    },
  }),
  WorkerView: object({
    id: uuidString(),
    poolId: uuidString(),
    name: { type: 'string' },
    hostname: { type: 'string' },
    labels: { type: 'array', items: { type: 'string' } },
    capacity: object(capacity),
    usage: { ...object(usage), nullable: true, description: 'What its last heartbeat reported; null before the first.' },
    sandboxed: { type: 'boolean' },
    version: { type: 'string' },
    status: {
      type: 'string',
      enum: [...WORKER_STATUSES],
      description: '`online` while its lease runs; then `left`, `lost` (no heartbeat within `WORKER_LEASE_MS`), `revoked` or `evicted`, for good.',
    },
    registeredAt: unixMs(),
    lastSeenAt: unixMs(),
    leaseExpiresAt: unixMs(),
    endedAt: unixMs('Unix ms; null while online.', true),
  }),
  WorkerListView: pageOf('workers', 'WorkerView'),
  RegisterWorkerBody: closedObject(['name', 'hostname', 'capacity', 'sandboxed', 'version'], {
    name: displayName("the worker's name", 63, 'gpu-01'),
    hostname,
    labels: {
      type: 'array',
      maxItems: 16,
      uniqueItems: true,
      items: WORKER_LABEL,
      default: [],
      description: 'What it offers (`gpu`, `arch=arm64`); at most 16.',
    },
    capacity: closedObject(['computers', 'cpus', 'memoryMb', 'diskMb'], capacity),
    sandboxed: {
      type: 'boolean',
      description: 'Whether it runs computers in the bubblewrap sandbox; a pool refuses unsandboxed workers unless `allowUnsandboxed`.',
    },
    version: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[0-9A-Za-z.+-]+$', description: 'Its agent-platform version.' },
  }),
  RegisteredWorkerView: object({
    workerId: uuidString(),
    poolId: uuidString(),
    poolName: { type: 'string' },
    sessionToken: {
      type: 'string',
      description: 'The credential of every later call of this worker (`wks_`...). Shown only in this answer; the worker keeps it in its data folder.',
    },
    capacity: object(capacity),
    leaseMs: { type: 'integer', description: 'How long it stays online without a heartbeat (`WORKER_LEASE_MS`).' },
    heartbeatMs: {
      type: 'integer',
      description: "How often to heartbeat: a third of the shorter of its lease and its steps' claims (`PROVISIONING_LEASE_MS`), which heartbeats renew.",
    },
    leaseExpiresAt: unixMs(),
  }),
  WorkerHeartbeatBody: closedObject([], {
    usage: closedObject(['cpuPercent', 'memoryMb', 'diskMb'], usage),
    steps: {
      type: 'array',
      maxItems: MAX_COMPUTERS_PER_WORKER,
      items: stepFence,
      description: "The steps it is running: each claim's lease is renewed, or reported back in `lostSteps`.",
    },
  }),
  WorkerHeartbeatView: object({
    leaseExpiresAt: unixMs(),
    lostSteps: {
      type: 'array',
      items: object({ computerId: uuidString(), position: { type: 'integer' } }),
      description: 'Steps of the heartbeat no longer its own (the computer was deleted or moved, or the step ran past its time): stop them.',
    },
    computers: {
      type: 'array',
      items: object({
        computerId: uuidString(),
        status: { type: 'string', enum: ['provisioning', 'active', 'error'] },
        tokenIssuedAt: unixMs('When its agent token was issued: a newer one than the worker holds means fetch it again and restart the agent.'),
      }),
      description: "The computers placed on it: what it should hold. Run an active one's agent; remove from disk any computer not listed.",
    },
  }),
  WorkerClaimBody: closedObject([], {
    waitMs: { type: 'integer', minimum: 0, maximum: 30_000, default: 0, description: 'Wait up to this long for work (a long poll); 0: look once.' },
  }),
  WorkerClaimView: object({
    work: {
      ...object(
        {
          computerId: uuidString(),
          organizationId: uuidString(),
          position: { type: 'integer' },
          stepId: { type: 'string', enum: ['create-computer', 'clone-repos', 'install-dependencies'] },
          claimId: uuidString('Fences its log and finish: a claim the server took back is refused (409 `step_claim_lost`).'),
          attempt: { type: 'integer' },
          timeoutMs: { type: 'integer', description: 'Stop the step after this long (`PROVISIONING_STEP_TIMEOUT_MS`) and finish it failed.' },
          repos: { type: 'array', items: { type: 'string' } },
          autoInstallDeps: { type: 'boolean' },
        },
        [],
        'A provisioning step of a computer placed on this worker, claimed for it: run it, name it in heartbeats, finish it. Null: none within `waitMs`.',
      ),
      nullable: true,
    },
    sync: {
      type: 'boolean',
      description: 'What the worker should hold changed (a computer placed, deleted or retried, or a step given up): heartbeat now to learn it.',
    },
  }),
  WorkerStepLogBody: closedObject(['computerId', 'position', 'claimId', 'text'], {
    ...stepFence.properties,
    text: { type: 'string', minLength: 1, maxLength: 65_536, description: "Output of the step, for the computer's provisioning log; at most 64 KiB." },
  }),
  WorkerStepFinishBody: closedObject(['computerId', 'position', 'claimId', 'status'], {
    ...stepFence.properties,
    status: { type: 'string', enum: ['completed', 'failed'] },
    error: { type: 'string', minLength: 1, maxLength: 2000, description: "Why it failed (with `failed` only): shown as the step's `error`." },
  }),
  WorkerStepFinishView: object({ computerStatus: { type: 'string', enum: ['provisioning', 'active', 'error'] } }),
  WorkerAgentTokenView: object({
    computerId: uuidString(),
    agentToken: { type: 'string', description: "The computer's agent token (`cpt_...`): keep it in memory only, for the computer's agent." },
    tokenIssuedAt: unixMs(),
  }),
  ListWorkerPoolsQuery: pageQuery(),
  ListWorkersQuery: pageQuery(),
  ListEnrollmentTokensQuery: pageQuery(),
});

export type WorkerPoolView = ApiSchema<'WorkerPoolView'>;
export type WorkerPoolListView = ApiSchema<'WorkerPoolListView'>;
export type EnrollmentTokenView = ApiSchema<'EnrollmentTokenView'>;
export type CreatedEnrollmentTokenView = ApiSchema<'CreatedEnrollmentTokenView'>;
export type EnrollmentTokenListView = ApiSchema<'EnrollmentTokenListView'>;
export type CreateWorkerPoolInput = ApiSchema<'CreateWorkerPoolBody'>;
export type UpdateWorkerPoolInput = ApiSchema<'UpdateWorkerPoolBody'>;
export type CreateEnrollmentTokenInput = ApiSchema<'CreateEnrollmentTokenBody'>;
export type PageInput = ApiSchema<'ListWorkerPoolsQuery'>;
export type WorkerView = ApiSchema<'WorkerView'>;
export type WorkerListView = ApiSchema<'WorkerListView'>;
export type RegisterWorkerInput = ApiSchema<'RegisterWorkerBody'>;
export type RegisteredWorkerView = ApiSchema<'RegisteredWorkerView'>;
export type WorkerHeartbeatInput = ApiSchema<'WorkerHeartbeatBody'>;
export type WorkerHeartbeatView = ApiSchema<'WorkerHeartbeatView'>;
export type WorkerClaimInput = ApiSchema<'WorkerClaimBody'>;
export type WorkerClaimView = ApiSchema<'WorkerClaimView'>;
export type WorkerStepLogInput = ApiSchema<'WorkerStepLogBody'>;
export type WorkerStepFinishInput = ApiSchema<'WorkerStepFinishBody'>;
export type WorkerStepFinishView = ApiSchema<'WorkerStepFinishView'>;
export type WorkerAgentTokenView = ApiSchema<'WorkerAgentTokenView'>;
