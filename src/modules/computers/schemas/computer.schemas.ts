import { WORKER_LABEL } from '../workers/worker-pool.schemas';
import { closedObject, NO_CONTROL_CHARACTERS, ref, SchemaObject, SchemaRegistry, uuidString } from '../../../platform/http/json-schema';
import { BYOM, LOCAL_PROVIDER, LOCAL_TEMPLATES, NAME_LIMITS, OwnerPrincipalKind, PROVIDERS, REPO_LIMITS } from '../domain/computer';
import { COMPUTER_STATUSES } from '../domain/computer-status';
import { STEP_IDS, STEP_STATUSES } from '../domain/provisioning-step';

const closed = closedObject;
const unixMs: SchemaObject = { type: 'integer', description: 'Unix ms.' };

/**
 * Names: 1-63 characters, not blank, no control characters. Two simple patterns rather than one
 * clever one: a pattern with two unbounded runs around `\S` takes quadratic time on a long input.
 */
const shortName = (description: string): SchemaObject => ({
  type: 'string',
  minLength: NAME_LIMITS.min,
  maxLength: NAME_LIMITS.max,
  allOf: [{ pattern: NO_CONTROL_CHARACTERS }, { pattern: '\\S' }],
  description: `${description} 1-63 characters, not blank, no control characters.`,
});
const remoteUser: SchemaObject = {
  type: 'string',
  minLength: NAME_LIMITS.min,
  maxLength: NAME_LIMITS.max,
  pattern: '^[A-Za-z0-9_][A-Za-z0-9._-]*\\$?$',
  description:
    'The operating-system user the agent runs as: 1-63 characters, a POSIX user name (letters, digits, `.`, `_`, `-`; not starting with `.` or `-`). ' +
    'Required for `byom`; for `local`, defaults to the user the server runs as.',
};

/**
 * The Computers module's JSON Schemas: the spec's Computer and provisioning step (closed), and the
 * request bodies, validated by Ajv and published unchanged in the OpenAPI document.
 */
export const computerSchemas = new SchemaRegistry('computers').add({
  ProvisioningStep: closed(['id', 'name', 'status'], {
    id: {
      type: 'string',
      enum: [...STEP_IDS],
      description: 'The phase: `create-computer`, then `clone-repos` (with repos), then `install-dependencies` (with `autoInstallDeps`).',
    },
    name: { type: 'string' },
    status: { type: 'string', enum: [...STEP_STATUSES], description: '`pending` → `running` → `completed` or `failed`.' },
    error: { type: 'string', description: 'Why the step failed.' },
    startedAt: unixMs,
    completedAt: unixMs,
    installSessionId: { type: 'string', description: "The session recording the step's commands and output (create, get and retry responses)." },
  }),
  TemplateSource: closed(
    ['kind', 'templateId'],
    {
      kind: { type: 'string', enum: ['template'] },
      templateId: {
        type: 'string',
        minLength: 1,
        maxLength: 200,
        description: `A template of the provider. \`${LOCAL_PROVIDER}\` offers: ${LOCAL_TEMPLATES.map((t) => `\`${t}\``).join(', ')} (an empty workspace).`,
      },
    },
    "Start from one of the provider's templates.",
  ),
  ComputerCopySource: closed(
    ['kind', 'computerId'],
    {
      kind: { type: 'string', enum: ['computer'] },
      computerId: uuidString('A computer you can see. Its `repos` and `autoInstallDeps` are used where the body gives none.'),
    },
    'Our second variant: start from the set-up of an existing computer.',
  ),
  ComputerSource: {
    type: 'object',
    oneOf: [ref('TemplateSource'), ref('ComputerCopySource')],
    discriminator: { propertyName: 'kind' },
    description: 'Where a managed computer starts from: `{kind: "template", templateId}` or `{kind: "computer", computerId}`.',
  },
  Computer: closed(
    ['id', 'name', 'providerType', 'createdAt'],
    {
      id: { type: 'string' },
      name: { type: 'string' },
      providerType: { type: 'string', enum: [...PROVIDERS], description: `\`${BYOM}\`, or the managed provider \`${LOCAL_PROVIDER}\`.` },
      createdAt: unixMs,
      hostname: { type: 'string', description: "Reported by the computer's agent when it connects (list, update, get)." },
      hostId: { type: 'string', format: 'uuid', description: "The machine's id: given for `byom`, assigned by a managed provider (create, get)." },
      status: { type: 'string', enum: [...COMPUTER_STATUSES] },
      provisioningSteps: { type: 'array', items: ref('ProvisioningStep'), description: "A managed computer's steps, in order." },
      relayClientUrl: {
        type: 'string',
        format: 'uri',
        description: "Where clients reach the computer's sessions: `{base_url}/api/v0/sessions?computerId={id}`.",
      },
      relayAgentUrl: { type: 'string', format: 'uri', description: "Where the computer's agent connects with its agent token: `{base_url}/api/v0/agent`." },
      remoteUser: { type: 'string' },
      clonedRepoDirectories: {
        type: 'array',
        items: { type: 'string' },
        description: 'Where each repo was cloned, in `repos` order, once `clone-repos` completed (create, get).',
      },
      ownerPrincipalKind: {
        type: 'string',
        enum: Object.values(OwnerPrincipalKind),
        description: '`user`, or `service_account` when created with `serviceAccountId` (create, get).',
      },
      ownerId: { type: 'string', description: 'The owning user or service account (create, get).' },
      computerSource: ref('ComputerSource'),
      placement: closed(
        ['poolId', 'poolName', 'labels'],
        {
          poolId: { type: 'string', format: 'uuid', nullable: true, description: 'The pool it was created for; `null`: any pool of the organization.' },
          poolName: { type: 'string', nullable: true },
          labels: { type: 'array', items: { type: 'string' }, description: 'Labels its worker must have, each of them.' },
        },
        "Not in the spec. A managed computer created with `pool` or `labels`: where it may run. Absent: on the server's host.",
      ),
      runsOn: {
        type: 'object',
        oneOf: [ref('RunsOnServer'), ref('RunsOnWorker'), ref('RunsOnWaiting')],
        discriminator: { propertyName: 'kind' },
        description:
          'Not in the spec. A managed computer\'s place: `{kind: "server"}`, `{kind: "worker", workerId, workerName, poolId, poolName}`, or `{kind: "waiting", since}` while no worker of its pool has room.',
      },
      agentToken: {
        type: 'string',
        description: "Not in the spec. The computer's agent token (`cpt_…`), in the create response only and never again; rotate it to get a new one.",
      },
    },
    'A computer. Accepts and carries no other properties.',
  ),
  RunsOnServer: closed(['kind'], { kind: { type: 'string', enum: ['server'] } }, "The server's host (the default pool)."),
  RunsOnWorker: closed(
    ['kind', 'workerId', 'workerName', 'poolId', 'poolName'],
    {
      kind: { type: 'string', enum: ['worker'] },
      workerId: { type: 'string', format: 'uuid' },
      workerName: { type: 'string' },
      poolId: { type: 'string', format: 'uuid' },
      poolName: { type: 'string' },
    },
    'A worker of a pool.',
  ),
  RunsOnWaiting: closed(['kind', 'since'], { kind: { type: 'string', enum: ['waiting'] }, since: unixMs }, 'No worker with room yet; waiting since `since`.'),
  CreateComputerBody: closed(['name', 'provider'], {
    name: shortName("The computer's name."),
    provider: {
      type: 'string',
      minLength: 1,
      enum: [...PROVIDERS],
      description: `\`${BYOM}\` registers an existing machine (active at once); \`${LOCAL_PROVIDER}\` prepares a workspace on the server's host (provisioning).`,
    },
    hostId: uuidString("Required for `byom`: the machine's id. Not accepted for a managed provider, which assigns one."),
    remoteUser,
    repos: {
      type: 'array',
      maxItems: REPO_LIMITS.maxRepos,
      items: { type: 'string', minLength: 1, maxLength: REPO_LIMITS.maxLength },
      description:
        'Managed only. At most 20 git repositories to clone, each at most 2048 characters: https, http, ssh or git URLs or scp-style addresses, ' +
        'or local paths and file:// URLs under the directory the operator allows (`LOCAL_REPOS_DIR`; none by default). ' +
        'URLs are stored normalized (WHATWG URL form: `HTTPS://GitHub.com:443/a/b.git` is stored as `https://github.com/a/b.git`) and must name a host, ' +
        'with no credentials (`user:password@`; an ssh or git user name alone is fine) and no fragment; no repo may hold whitespace or control characters, ' +
        'and URLs and scp-style addresses none of `<>"\'{}|\\^`` unencoded. Paths and scp-style addresses are stored as given.',
    },
    autoInstallDeps: { type: 'boolean', description: "Managed only. Install each repo's dependencies with the package manager its lockfile names." },
    serviceAccountId: {
      type: 'string',
      minLength: 1,
      description:
        "Owners and managers only: create the computer for this service account of your organization instead of yourself. A person's id, or another organization's, is 404 `service_account_not_found`.",
    },
    source: ref('ComputerSource'),
    pool: {
      type: 'string',
      minLength: 1,
      maxLength: 63,
      description:
        "Not in the spec. Managed only: run the computer on a worker of this pool of your organization (its name or id) instead of the server's host; " +
        "another organization's pool, or an unknown one, is 404 `worker_pool_not_found`. A copy (`source.computerId`) keeps its source's pool unless given.",
    },
    labels: {
      type: 'array',
      maxItems: 16,
      uniqueItems: true,
      items: WORKER_LABEL,
      description:
        'Not in the spec. Managed only: place the computer on a worker that has every one of these labels (`gpu`, `arch=arm64`), in `pool` or, without it, in any pool of your organization. At most 16.',
    },
  }),
  UpdateComputerBody: {
    ...closed([], { name: shortName('A new name.'), remoteUser }),
    minProperties: 1,
    description: 'At least one of `name` and `remoteUser`.',
  },
  RotatedAgentToken: closed(['computerId', 'agentToken', 'createdAt'], {
    computerId: { type: 'string' },
    agentToken: { type: 'string', description: 'The new token, shown this once.' },
    createdAt: unixMs,
  }),
  ConnectAgentBody: closed(['hostname'], {
    hostname: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      pattern: '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$',
      description: "The machine's host name (RFC 1123).",
    },
  }),
});
