import { Injectable } from '@nestjs/common';
import { ComputerCaller, ComputerTokenLookup, isAdmin, OrganizationControlsReader, Principal, Role } from '../auth';
import { ComputerDirectory } from '../sessions';
import { isUuid } from '../../platform/database/ids';
import { ComputersRepository } from './computers.repository';
import { BYOM } from './domain/computer';
import { kindRefusal } from './domain/kind-controls';

/** Sessions' ComputerDirectory: whether the caller may see the computer (members: their own; guests: none), and may give it work. */
@Injectable()
export class ComputerVisibility extends ComputerDirectory {
  constructor(
    private readonly repository: ComputersRepository,
    private readonly controls: OrganizationControlsReader,
  ) {
    super();
  }

  async workRefusal(organizationId: string, computerId: string): Promise<{ control: string; detail: string } | null> {
    const computer = await this.repository.kindAndOwnerEmail(computerId, organizationId);
    if (!computer) return null;
    const refusal = kindRefusal(await this.controls.read(organizationId), computer.provider !== BYOM, computer.ownerEmail);
    if (!refusal) return null;
    const why = refusal.reason === 'disabled' ? refusal.detail : `${refusal.detail}, and its owner is not on the list.`;
    return { control: refusal.control, detail: `Computer ${computerId} takes no new work: ${why} A turn already running finishes.` };
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
