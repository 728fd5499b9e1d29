/**
 * The worker channel (`/api/v0/worker/...`) as the server's OpenAPI document describes it: each operation's request
 * and answer, picked by name from the generated types (see agent-channel.ts). The worker (src/worker) is a program
 * operators run on their own machines, sharing only this folder with the server.
 */
import type { components, paths } from './generated/openapi';

type Json<Content> = Content extends { content: { 'application/json': infer Body } } ? Body : never;
/** The JSON body an operation takes. */
type RequestOf<Operation> = Operation extends { requestBody?: infer Body } ? Json<NonNullable<Body>> : never;
/** The JSON body of an operation's answer with this status. */
type AnswerOf<Operation, Status extends number> = Operation extends { responses: { [S in Status]: infer Answer } } ? Json<Answer> : never;

type Register = paths['/api/v0/worker/register']['post'];
type Beat = paths['/api/v0/worker/heartbeat']['post'];
type Claim = paths['/api/v0/worker/claims']['post'];
type StepLog = paths['/api/v0/worker/steps/log']['post'];
type StepFinish = paths['/api/v0/worker/steps/finish']['post'];
type AgentToken = paths['/api/v0/worker/computers/{computerId}/agent-token']['get'];

/** Who the worker is and what it offers: sent with the pool's enrollment token (`wkt_...`). */
export type RegisterRequest = RequestOf<Register>;
/** The worker's session token (`wks_...`, the credential of every later call) and the terms of its lease. */
export type Registration = AnswerOf<Register, 201>;
export type WorkerCapacity = RegisterRequest['capacity'];
export type HeartbeatRequest = RequestOf<Beat>;
export type WorkerUsage = NonNullable<HeartbeatRequest['usage']>;
export type HeartbeatAnswer = AnswerOf<Beat, 200>;
/** A step the worker runs, named in its heartbeats to keep its claim. */
export type HeldStep = NonNullable<HeartbeatRequest['steps']>[number];
/** A computer placed on the worker, as a heartbeat answers it: the desired state. */
export type PlacedComputer = HeartbeatAnswer['computers'][number];
export type ClaimAnswer = AnswerOf<Claim, 200>;
/** A provisioning step claimed for the worker. */
export type StepWork = NonNullable<ClaimAnswer['work']>;
export type StepLogRequest = RequestOf<StepLog>;
export type StepFinishRequest = RequestOf<StepFinish>;
export type StepFinishAnswer = AnswerOf<StepFinish, 200>;
export type AgentTokenAnswer = AnswerOf<AgentToken, 200>;

/** Why a worker's session ended, as a 401 `invalid_worker_token` says in `metadata.workerStatus`. */
export type EndedStatus = Exclude<components['schemas']['WorkerView']['status'], 'online'>;
