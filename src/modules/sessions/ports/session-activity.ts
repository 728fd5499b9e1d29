import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { MessageEntity, SessionEntity } from '../entities';
import type { ContentBlock } from '../domain/message';

/**
 * Facts written by the very statement that stores a user message (the API's hot path stays one
 * statement): a data-modifying CTE body that may read the CTE `s`, the session row as updated
 * (`id`, `organization_id`, `owner_id`, `settings`, `updated_at`), with its parameters numbered
 * from `firstParam`.
 */
export interface FactStatement {
  cte(firstParam: number): string;
  params: unknown[];
}

/** Where a session's activity is recorded as it happens, inside the transaction that stores it. */
export interface ActivityRecorder {
  /** A session was created (at `session.createdAt`). */
  sessionStarted(manager: EntityManager, session: SessionEntity): Promise<void>;
  /** Messages were stored in the session (each at its own `createdAt`). */
  messagesAdded(manager: EntityManager, session: SessionEntity, messages: MessageEntity[]): Promise<void>;
  /** The facts of a user message being added through the API, as part of the statement that stores it. */
  userMessageStatement(message: { authorId: string; source: string; content: ContentBlock[] }): FactStatement;
  /** A token usage report was added to the day's per-model totals. */
  usageReported(manager: EntityManager, session: SessionEntity, report: { model: string; at: Date }): Promise<void>;
}

/**
 * Sessions' port to the analytics facts. Analytics binds its recorder here at start-up (it owns the
 * facts and their meaning); Sessions calls it in the same transaction as the activity, so a fact is
 * stored exactly when the activity is. Unbound, nothing is recorded.
 */
@Injectable()
export class SessionActivity {
  private recorder: ActivityRecorder | null = null;

  bind(recorder: ActivityRecorder): void {
    this.recorder = recorder;
  }

  async sessionStarted(manager: EntityManager, session: SessionEntity): Promise<void> {
    await this.recorder?.sessionStarted(manager, session);
  }

  async messagesAdded(manager: EntityManager, session: SessionEntity, messages: MessageEntity[]): Promise<void> {
    if (messages.length > 0) await this.recorder?.messagesAdded(manager, session, messages);
  }

  userMessageStatement(message: { authorId: string; source: string; content: ContentBlock[] }): FactStatement | null {
    return this.recorder?.userMessageStatement(message) ?? null;
  }

  async usageReported(manager: EntityManager, session: SessionEntity, report: { model: string; at: Date }): Promise<void> {
    await this.recorder?.usageReported(manager, session, report);
  }
}
