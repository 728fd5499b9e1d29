import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AccessPolicy, Principal } from '../auth';
import { isUuid } from '../../platform/database/ids';
import { ComputersRepository } from './computers.repository';
import { computerNotFound } from './domain/computers.errors';
import { ComputerEntity } from './entities';

/** Which computers a caller may see and change: owners and managers every one of the organization, members their own. */
@Injectable()
export class ComputerAccess {
  constructor(private readonly repository: ComputersRepository) {}

  /**
   * The computer if the caller may see it; 404 otherwise, whatever the reason. `field` names the
   * request field that gave the id; `manager` and `lock` read it in (and lock it for) a transaction.
   */
  async visible(principal: Principal, computerId: string, options: { field?: string; manager?: EntityManager; lock?: boolean } = {}): Promise<ComputerEntity> {
    const computer = isUuid(computerId) ? await this.repository.find(computerId, principal.organizationId, options.manager, options.lock ?? false) : null;
    if (!computer || !AccessPolicy.canWrite(principal, computer)) throw computerNotFound(computerId, options.field);
    return computer;
  }
}
