import { Injectable } from '@nestjs/common';
import { ComputerCaller, ComputerTokenLookup, isAdmin, Principal, Role } from '../auth';
import { ComputerDirectory } from '../sessions';
import { isUuid } from '../../platform/database/ids';
import { ComputersRepository } from './computers.repository';

/** Sessions' ComputerDirectory: whether the caller may see the computer (members: their own; guests: none). */
@Injectable()
export class ComputerVisibility extends ComputerDirectory {
  constructor(private readonly repository: ComputersRepository) {
    super();
  }

  async visibleTo(principal: Principal, computerId: string): Promise<boolean> {
    if (principal.role === Role.Guest || !isUuid(computerId)) return false;
    return this.repository.exists(computerId, principal.organizationId, isAdmin(principal.role) ? undefined : principal.userId);
  }
}

/** Auth's ComputerTokenLookup: the computer an agent token's hash belongs to. */
@Injectable()
export class ComputerTokens extends ComputerTokenLookup {
  constructor(private readonly repository: ComputersRepository) {
    super();
  }

  byHash(tokenHash: string): Promise<ComputerCaller | null> {
    return this.repository.findCallerByTokenHash(tokenHash);
  }
}
