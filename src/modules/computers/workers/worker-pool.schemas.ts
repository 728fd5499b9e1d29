import type { ApiSchema } from '../../../platform/http/api-schema';
import { answerObject as object, closedObject, displayName, SchemaObject, SchemaRegistry, unixMs, uuidString } from '../../../platform/http/json-schema';
import { pageOf, pageQuery } from '../../../platform/http/pagination';

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
const createdBy: SchemaObject = { ...uuidString('Who created it; `null`: the operator (CLI).'), nullable: true };

const pool = {
  id: uuidString(),
  name: { type: 'string' },
  description: { type: 'string', nullable: true },
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
  }),
  UpdateWorkerPoolBody: {
    ...closedObject([], { name: poolName, description }),
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
  ListWorkerPoolsQuery: pageQuery(),
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
