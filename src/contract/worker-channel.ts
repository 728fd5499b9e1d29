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

/** Who the worker is and what it offers: sent with the pool's enrollment token (`wkt_...`). */
export type RegisterRequest = RequestOf<Register>;
/** The worker's session token (`wks_...`, the credential of every later call) and the terms of its lease. */
export type Registration = AnswerOf<Register, 201>;
export type WorkerCapacity = RegisterRequest['capacity'];
export type HeartbeatRequest = RequestOf<Beat>;
export type WorkerUsage = NonNullable<HeartbeatRequest['usage']>;
export type HeartbeatAnswer = AnswerOf<Beat, 200>;

/** Why a worker's session ended, as a 401 `invalid_worker_token` says in `metadata.workerStatus`. */
export type EndedStatus = Exclude<components['schemas']['WorkerView']['status'], 'online'>;
