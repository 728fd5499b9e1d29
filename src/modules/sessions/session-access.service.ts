import { Injectable } from '@nestjs/common';
import { AccessPolicy, OrganizationControlsReader, Principal, Role } from '../auth';
import { isUuid } from '../../platform/database/ids';
import { sessionNotFound, SessionsError, SessionsErrorCode } from './domain/sessions.errors';
import { SessionEntity } from './entities';
import { ComputerVisibility } from './contracts/computer-visibility';
import { SessionsRepository } from './sessions.repository';

type Owned = Pick<SessionEntity, 'organizationId' | 'ownerId'>;

/**
 * Who may read and change which session, under the role matrix and `restrictMemberVisibility`:
 * a session the caller may not read answers 404, whatever the reason; one it may read but not change, 403.
 */
@Injectable()
export class SessionAccess {
  constructor(
    private readonly repository: SessionsRepository,
    private readonly controls: OrganizationControlsReader,
    private readonly computers: ComputerVisibility,
  ) {}

  /** The session if the caller may read it (and, with `computerId`, it is that computer's); 404 otherwise. */
  async readable(principal: Principal, sessionId: string, computerId?: string): Promise<SessionEntity> {
    if (computerId !== undefined) await this.requireComputer(principal, computerId);
    const session = isUuid(sessionId) ? await this.repository.findSession(sessionId, principal.organizationId) : null;
    if (!session || (computerId !== undefined && session.computerId !== computerId)) throw sessionNotFound(sessionId);
    return this.readableEntity(principal, session, sessionId);
  }

  /** `session`, already read, if the caller may read it; 404 otherwise. */
  async readableEntity<S extends Owned>(principal: Principal, session: S, sessionId: string): Promise<S> {
    if (!(await this.readCheck(principal))(session)) throw sessionNotFound(sessionId);
    return session;
  }

  /**
   * Whether the caller may read a session, decided without a query: for a check inside a
   * transaction, where (on PGlite's one connection) a read outside it would wait for it.
   */
  async readCheck(principal: Principal): Promise<(session: Owned) => boolean> {
    const { restrictMemberVisibility } = await this.controls.read(principal.organizationId);
    return (session) => AccessPolicy.canRead(principal, session, restrictMemberVisibility);
  }

  /** A readable session the caller may not change answers 403. */
  writable<S extends Owned>(principal: Principal, session: S): S {
    if (!AccessPolicy.canWrite(principal, session)) {
      throw new SessionsError(
        SessionsErrorCode.ReadOnlyRole,
        principal.role === Role.Guest
          ? 'Guests can read their sessions but not change them.'
          : 'Members can change only their own sessions; this one belongs to someone else.',
      );
    }
    return session;
  }

  async seesOnlyOwnSessions(principal: Principal): Promise<boolean> {
    if (principal.role === Role.Guest) return true;
    if (principal.role !== Role.Member) return false;
    return (await this.controls.read(principal.organizationId)).restrictMemberVisibility;
  }

  /** 404 `computer_not_found` (field `computerId`) unless the caller may see that computer. */
  async requireComputer(principal: Principal, computerId: string): Promise<void> {
    if (!isUuid(computerId) || !(await this.computers.visibleTo(principal, computerId))) {
      throw new SessionsError(SessionsErrorCode.ComputerNotFound, `No computer ${computerId} exists in your organization.`, {
        field: 'computerId',
      });
    }
  }
}
