import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EventLog } from '../../platform/events';
import { newId } from '../../platform/database/ids';
import { MessageRole } from './domain/message';
import { SessionStatus } from './domain/session-status';
import { SessionEntity } from './entities';
import { SessionsRepository } from './sessions.repository';

/** Sessions in which the server records work it does itself (a computer's provisioning output). */
@Injectable()
export class ServerLogs {
  constructor(
    private readonly repository: SessionsRepository,
    private readonly events: EventLog,
  ) {}

  /** Opens a server log inside the caller's transaction. It stays `idle`: no agent is asked to answer it. */
  async open(manager: EntityManager, input: { organizationId: string; ownerId: string; computerId: string; title: string }): Promise<string> {
    const now = new Date();
    const session = Object.assign(new SessionEntity(), {
      id: newId(),
      organizationId: input.organizationId,
      ownerId: input.ownerId,
      computerId: input.computerId,
      title: input.title,
      status: SessionStatus.Idle,
      settings: {},
      createdAt: now,
      updatedAt: now,
    });
    await this.repository.insertSession(manager, session);
    return session.id;
  }

  /** Appends one `tool` message of text to a server log; false when the session is gone. */
  async append(organizationId: string, sessionId: string, text: string): Promise<boolean> {
    const messageId = newId();
    return this.repository.transaction(async (manager) => {
      const seq = await this.repository.appendServerMessage(manager, {
        sessionId,
        organizationId,
        messageId,
        role: MessageRole.Tool,
        content: [{ type: 'text', text: storable(text) }],
      });
      if (seq === null) return false;
      this.events.raise(manager, {
        type: 'message.added',
        organizationId,
        sessionId,
        actor: { kind: 'system' },
        data: { sessionId, messageId, role: MessageRole.Tool, authorId: null, computerId: null },
      });
      return true;
    });
  }
}

/** Command output may hold what PostgreSQL cannot store in jsonb (NUL, unpaired surrogates): replaced by U+FFFD. */
function storable(text: string): string {
  // eslint-disable-next-line no-control-regex -- replacing NUL is the point
  return text.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}
