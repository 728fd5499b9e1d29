import { Injectable } from '@nestjs/common';
import type { AnyStoredEvent, EventActor, EventType } from '../../platform/events';
import { OrganizationsService } from '../auth';
import { MessageView, SessionReader } from '../sessions';
import { EVENT_CATALOGUE } from './schemas/event.schemas';

/** Who caused an event, as the public sees it: the kind and the ids. The audit log adds the rest of EventActor. */
export type PublicActor = Pick<EventActor, 'kind' | 'userId' | 'computerId'> & Partial<EventActor>;

/**
 * An event as streams, lists, the audit log and webhooks give it (schema `Event` in the OpenAPI
 * document): the log's event with its time in Unix ms, what it is about (`target`) and, for
 * `message.added` where the organization keeps message history, the message itself.
 */
export interface PublicEvent {
  id: string;
  seq: number;
  type: EventType;
  occurredAt: number;
  organizationId: string;
  sessionId: string | null;
  target: { kind: string; id: string };
  actor: PublicActor | null;
  data: Record<string, unknown>;
}

export interface PresentOptions {
  /** Put the message into `message.added` (the organization's `messageHistory` feature). */
  messageHistory: boolean;
  /** The audit log's actor: with email, role, credential, address and request id. */
  audit?: boolean;
}

/** Turns stored events into their public shape, the one shape of every way events leave the server. */
@Injectable()
export class EventPresenter {
  constructor(
    private readonly sessions: SessionReader,
    private readonly organizations: OrganizationsService,
  ) {}

  /** For callers without a principal (webhooks): reads the organization's `messageHistory` feature itself. */
  async presentFor(organizationId: string, events: readonly AnyStoredEvent[], options: Omit<PresentOptions, 'messageHistory'> = {}): Promise<PublicEvent[]> {
    const messageHistory = events.some((e) => e.type === 'message.added') && (await this.organizations.hasFeature(organizationId, 'messageHistory'));
    return this.present(events, { ...options, messageHistory });
  }

  async present(events: readonly AnyStoredEvent[], options: PresentOptions): Promise<PublicEvent[]> {
    let messages = new Map<string, MessageView>();
    if (options.messageHistory) {
      const wanted = events.filter((e) => e.type === 'message.added');
      if (wanted.length > 0)
        messages = await this.sessions.messages(
          wanted[0].organizationId,
          wanted.map((e) => e.data.messageId),
        );
    }
    return events.map((event) => {
      const data: Record<string, unknown> = { ...event.data };
      if (event.type === 'message.added') {
        const message = messages.get(event.data.messageId);
        if (message) data.message = message;
      }
      const { kind, field } = EVENT_CATALOGUE[event.type].target;
      return {
        id: event.id,
        seq: event.seq,
        type: event.type,
        occurredAt: event.occurredAt.getTime(),
        organizationId: event.organizationId,
        sessionId: event.sessionId,
        target: { kind, id: String((event.data as unknown as Record<string, unknown>)[field]) },
        actor: event.actor ? (options.audit ? { ...event.actor } : publicActor(event.actor)) : null,
        data,
      };
    });
  }
}

function publicActor(actor: EventActor): PublicActor {
  return {
    kind: actor.kind,
    ...(actor.userId ? { userId: actor.userId } : {}),
    ...(actor.computerId ? { computerId: actor.computerId } : {}),
    ...(actor.workerId ? { workerId: actor.workerId } : {}),
  };
}
