/** The worker a session token belongs to, while its session lasts. */
export interface SessionWorker {
  workerId: string;
  organizationId: string;
}

/**
 * Where the request edge learns which worker sends a request on the worker channel, to count it against that worker's
 * rate limit rather than its address's: a contract the Computers module fulfils (it owns workers; it imports Auth).
 * Only for the count: the channel itself checks the session on every request.
 */
export abstract class WorkerSessionLookup {
  abstract bySessionHash(sessionHash: string): Promise<SessionWorker | null>;
}

/** No worker, so no session: for programs without the Computers module (the CLI). */
export class NoWorkerSessions extends WorkerSessionLookup {
  bySessionHash(): Promise<null> {
    return Promise.resolve(null);
  }
}
