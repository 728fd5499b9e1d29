import { Injectable } from '@nestjs/common';
import { AccessPolicy, isAdmin, OrganizationControlsReader, Principal } from '../auth';
import { isUuid } from '../../platform/database/ids';
import type { EntityManager } from 'typeorm';
import { MessageView, toMessageView } from './domain/views';
import { MessageWithSession, SessionsRepository } from './sessions.repository';
import { SessionAccess } from './session-access.service';

/**
 * What other modules may read of sessions without reaching into them: whether a caller may read
 * a session (or which of many), and messages by id. Events use it to filter streams by the session
 * rules and to put the message into `message.added`; Analytics' listener to read the messages it counts.
 */
@Injectable()
export class SessionReader {
  constructor(
    private readonly access: SessionAccess,
    private readonly repository: SessionsRepository,
    private readonly controls: OrganizationControlsReader,
  ) {}

  /** Resolves if the caller may read the session; throws the sessions' 404 otherwise (another organization's included). */
  async requireReadable(principal: Principal, sessionId: string): Promise<void> {
    await this.access.readable(principal, sessionId);
  }

  /**
   * Which of `sessionIds` the caller may read now (deleted sessions are in none). `owners` caches
   * what was looked up: a session's owner never changes.
   */
  async readable(principal: Principal, sessionIds: readonly string[], owners: Map<string, string | null> = new Map()): Promise<Set<string>> {
    if (isAdmin(principal.role)) return new Set(sessionIds);
    const { restrictMemberVisibility } = await this.controls.read(principal.organizationId);
    const unknown = [...new Set(sessionIds)].filter((id) => !owners.has(id) && isUuid(id));
    if (unknown.length > 0) {
      const found = await this.repository.sessionOwners(principal.organizationId, unknown);
      for (const id of unknown) owners.set(id, found.get(id) ?? null);
    }
    const readable = new Set<string>();
    for (const id of sessionIds) {
      const ownerId = owners.get(id);
      if (ownerId && AccessPolicy.canRead(principal, { organizationId: principal.organizationId, ownerId }, restrictMemberVisibility)) readable.add(id);
    }
    return readable;
  }

  /** The organization's messages among `messageIds`, as the spec's Message; missing ones (deleted) are absent. */
  async messages(organizationId: string, messageIds: readonly string[]): Promise<Map<string, MessageView>> {
    const found = await this.repository.messagesByIds(organizationId, [...new Set(messageIds)].filter(isUuid));
    return new Map([...found].map(([id, message]) => [id, toMessageView(message)]));
  }

  /** The organization's messages with these ids (those still stored), with their sessions, in the caller's transaction. */
  messagesWithSessions(manager: EntityManager, organizationId: string, messageIds: string[]): Promise<MessageWithSession[]> {
    return this.repository.messagesWithSessions(manager, organizationId, messageIds);
  }
}
