import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { isAdmin, MembersService, OrganizationControlsReader, Principal, Role } from '../../auth';
import { ComputerVisibility } from '../../sessions';
import { isUuid } from '../../../platform/database/ids';
import { ComputersRepository } from '../computers.repository';
import { BYOM } from '../domain/computer';
import { allowedEmails, kindRefusal } from '../domain/kind-controls';

/** Sessions' ComputerVisibility, kept from the computers table: whether the caller may see the computer (members: their own; guests: none), and may give it work. */
@Injectable()
export class ComputerVisibilityFromTable extends ComputerVisibility {
  /** A computer's kind and owner never change: read once a minute at most, one read at a time per computer. */
  private readonly kinds = new LRUCache<string, { provider: string; ownerId: string }, { organizationId: string; computerId: string }>({
    max: 10_000,
    ttl: 60_000,
    // The clock read once per 10 ms, not per request (lru-cache sets a timer each time it reads it).
    ttlResolution: 10,
    fetchMethod: async (_key, _stale, { context }) => (await this.repository.kindAndOwner(context.computerId, context.organizationId)) ?? undefined,
  });

  constructor(
    private readonly repository: ComputersRepository,
    private readonly controls: OrganizationControlsReader,
    private readonly members: MembersService,
  ) {
    super();
  }

  /** On every claim: the owner's email is read (from Auth) only when the computer's kind is limited to listed people. */
  async workRefusal(organizationId: string, computerId: string): Promise<{ control: string; detail: string } | null> {
    const key = `${organizationId}|${computerId}`;
    const computer = this.kinds.get(key) ?? (await this.kinds.fetch(key, { context: { organizationId, computerId } }));
    if (!computer) return null;
    const controls = await this.controls.read(organizationId);
    const managed = computer.provider !== BYOM;
    const ownerEmail =
      allowedEmails(controls, managed).length > 0 ? ((await this.members.emailsOf(organizationId, [computer.ownerId])).get(computer.ownerId) ?? '') : '';
    const refusal = kindRefusal(controls, managed, ownerEmail);
    if (!refusal) return null;
    const why = refusal.reason === 'disabled' ? refusal.detail : `${refusal.detail}, and its owner is not on the list.`;
    return { control: refusal.control, detail: `Computer ${computerId} takes no new work: ${why} A turn already running finishes.` };
  }

  async visibleTo(principal: Principal, computerId: string): Promise<boolean> {
    if (principal.role === Role.Guest || !isUuid(computerId)) return false;
    return this.repository.exists(computerId, principal.organizationId, isAdmin(principal.role) ? undefined : principal.userId);
  }
}
