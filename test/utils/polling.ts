import type { TestUser } from './factories';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
export type Body = Record<string, any>;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * How a test proves that a wait (a long poll, a timeout) ends on an event and not when its time runs out, without
 * asserting any speed: it waits LONG_WAIT_MS and must be answered within half of it. The two outcomes lie seconds
 * apart, which no busy machine closes; a bound of a few hundred milliseconds once failed in CI for that reason.
 */
export const LONG_WAIT_MS = 20_000;
export const ENDED_EARLY_MS = LONG_WAIT_MS / 2;

/** What `promise` gives, or a failure naming `what` when it has not settled within `ms` (the timer does not outlive it). */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Polls `read` every 100 ms until `done` holds; fails naming `what` and the last value after `timeoutMs`. */
export async function until<T>(read: () => T | Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await sleep(100);
  }
}

/** One request to a server started as a process (no supertest app to hand), as `user`. */
export async function api(base: string, user: TestUser, method: string, path: string, body?: unknown): Promise<{ status: number; body: Body }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...user.auth, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: res.status === 204 ? {} : ((await res.json()) as Body) };
}

/** Where a directory the API names (`$COMPUTERS_DIR/<id>/...`, never the server's real folder) lies on the test's disk. */
export function onServerDisk(directory: string, computersDir: string): string {
  return directory.replace(/^\$COMPUTERS_DIR(?=\/)/, computersDir);
}
