import type { Schemas } from '../api/client';

export type Session = Schemas['Session'];
export type SessionStatus = Session['status'];
export type Computer = Schemas['Computer'];

export const STATUS_LABELS: Record<SessionStatus, string> = { idle: 'Idle', pending: 'Waiting for an agent', running: 'Running' };

/** A session's name in lists and headings: its title, else the start of its id. */
export function sessionName(session: Pick<Session, 'title' | 'sessionId'>): string {
  return session.title?.trim() || `Untitled session ${session.sessionId.slice(0, 8)}`;
}

/** Who may write to sessions at all (docs/api.md, Roles): a guest may only read their own. */
export function mayWriteSessions(role: string): boolean {
  return role !== 'guest';
}

/** Computers are not for guests (every computers route answers them 403). */
export function maySeeComputers(role: string): boolean {
  return role !== 'guest';
}
