import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { MessageWithSession, SessionsRepository } from './sessions.repository';

export type { MessageWithSession };

/**
 * What other modules may read of sessions, for their listeners of Sessions' events: stored
 * messages with the session they belong to, read in the listener's own transaction.
 */
@Injectable()
export class SessionsReader {
  constructor(private readonly repository: SessionsRepository) {}

  /** The organization's messages with these ids (those still stored), with their sessions. */
  messagesWithSessions(manager: EntityManager, organizationId: string, messageIds: string[]): Promise<MessageWithSession[]> {
    return this.repository.messagesWithSessions(manager, organizationId, messageIds);
  }
}
