import { Injectable } from '@nestjs/common';
import { SessionWorker, WorkerSessionLookup } from '../../auth';
import { WorkerStatus } from '../workers/worker';
import { WorkersRepository } from '../workers/workers.repository';

/** Auth's WorkerSessionLookup, kept from the workers table: the online worker a session token's hash belongs to. */
@Injectable()
export class WorkerSessionLookupFromTable extends WorkerSessionLookup {
  constructor(private readonly workers: WorkersRepository) {
    super();
  }

  async bySessionHash(sessionHash: string): Promise<SessionWorker | null> {
    const worker = await this.workers.bySessionHash(sessionHash);
    return worker?.status === WorkerStatus.Online ? { workerId: worker.id, organizationId: worker.organizationId } : null;
  }
}
