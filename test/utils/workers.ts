import { randomUUID } from 'node:crypto';
import type { TestUser } from './factories';
import type { TestApp } from './test-app';
import { expectStatus } from './v0-errors';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A new worker pool of the user's organization (a fresh name unless `settings` give one) and an enrollment token of it. */
export async function poolWithToken(t: TestApp, user: TestUser, settings: Json = {}): Promise<{ pool: Json; token: string; tokenId: string }> {
  const created = await t
    .http()
    .post('/api/v0/worker-pools')
    .set(user.auth)
    .send({ name: `pool-${randomUUID().slice(0, 8)}`, ...settings });
  expectStatus(created, 201);
  const token = await t.http().post(`/api/v0/worker-pools/${created.body.id}/enrollment-tokens`).set(user.auth).send({ name: 'rack' });
  expectStatus(token, 201);
  return { pool: created.body as Json, token: token.body.token as string, tokenId: token.body.id as string };
}

/** What a worker says of itself when it registers; `more` replaces any of it. */
export function workerRegistration(more: Json = {}): Json {
  return {
    name: `w-${randomUUID().slice(0, 6)}`,
    hostname: 'worker-1.lab.example',
    labels: [],
    capacity: { computers: 4, cpus: 8, memoryMb: 16384, diskMb: 100000 },
    sandboxed: true,
    version: '0.1.0',
    ...more,
  };
}

/** Registers a worker with the enrollment token: its id and session token. */
export async function registerWorker(t: TestApp, token: string, more: Json = {}): Promise<{ id: string; session: string }> {
  const res = await t
    .http()
    .post('/api/v0/worker/register')
    .set({ Authorization: `Bearer ${token}` })
    .send(workerRegistration(more));
  expectStatus(res, 201);
  return { id: res.body.workerId as string, session: res.body.sessionToken as string };
}
