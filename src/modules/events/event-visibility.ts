import { Injectable } from '@nestjs/common';
import type { AnyStoredEvent } from '../../platform/events';
import { isAdmin, Principal, Role } from '../auth';
import { ComputerVisibility, SessionReader } from '../sessions';

/**
 * Which events a caller may see, by the rules of the objects themselves:
 * - owners and managers: every event of the organization;
 * - members and guests: events of the sessions they may read (members: all, unless
 *   `restrictMemberVisibility`, then their own; guests: their own), of the computers they may see
 *   (members: their own; guests: none), of their own API keys, and readiness reports (which every
 *   user may read); never `member.changed` nor `controls.revised`, nor any type without a session
 *   that is not named here (a new type stays hidden from them until its rule is written).
 */
@Injectable()
export class EventVisibility {
  constructor(
    private readonly sessions: SessionReader,
    private readonly computers: ComputerVisibility,
  ) {}

  /** A filter for one caller; it remembers what it looked up (session and computer owners never change). */
  viewer(principal: Principal): EventViewer {
    return new EventViewer(principal, this.sessions, this.computers);
  }
}

export class EventViewer {
  private readonly sessionOwners = new Map<string, string | null>();
  private readonly computersSeen = new Map<string, boolean>();

  constructor(
    private readonly principal: Principal,
    private readonly sessions: SessionReader,
    private readonly computers: ComputerVisibility,
  ) {}

  get seesEverything(): boolean {
    return isAdmin(this.principal.role);
  }

  /** Whether the caller may read the session (and so its live events). */
  async seesSession(sessionId: string): Promise<boolean> {
    if (this.seesEverything) return true;
    return (await this.sessions.readable(this.principal, [sessionId], this.sessionOwners)).has(sessionId);
  }

  /** The events the caller may see, in their order. Read again for every batch: controls may change. */
  async filter(events: readonly AnyStoredEvent[]): Promise<AnyStoredEvent[]> {
    if (this.seesEverything) return [...events];
    const sessionIds = events.map((e) => e.sessionId).filter((id): id is string => id !== null);
    const readable = sessionIds.length > 0 ? await this.sessions.readable(this.principal, sessionIds, this.sessionOwners) : new Set<string>();
    const visible: AnyStoredEvent[] = [];
    for (const event of events) if (await this.sees(event, readable)) visible.push(event);
    return visible;
  }

  private async sees(event: AnyStoredEvent, readableSessions: Set<string>): Promise<boolean> {
    if (event.sessionId !== null) return readableSessions.has(event.sessionId);
    switch (event.type) {
      case 'computer.created':
      case 'computer.status_changed':
      case 'computer.placement_changed':
        return this.seesComputer(event.data.computerId);
      case 'computer.deleted':
        // Gone, so not visible any more: a member sees the deletion of their own.
        return this.principal.role !== Role.Guest && event.data.ownerId === this.principal.userId;
      case 'api_key.created':
      case 'api_key.revoked':
        return event.data.userId === this.principal.userId;
      case 'readiness.report_created':
        return true;
      default:
        return false;
    }
  }

  private async seesComputer(computerId: string): Promise<boolean> {
    let seen = this.computersSeen.get(computerId);
    if (seen === undefined) {
      seen = await this.computers.visibleTo(this.principal, computerId);
      // A computer deleted since is not remembered: its id never comes back.
      this.computersSeen.set(computerId, seen);
    }
    return seen;
  }
}
