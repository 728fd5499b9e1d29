/**
 * The one typed map from event type to its data. Each module adds its events by declaration
 * merging in its own `events/` folder, so raising and listening are checked by the compiler:
 *
 *   declare module '../../../platform/events/event' {
 *     interface EventDataMap { 'message.added': MessageAddedData }
 *   }
 *
 * Types are public: streams, webhooks and the audit log show them as they are stored.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface EventDataMap {}

export type EventType = keyof EventDataMap;

/** Who caused an event: ids and what an auditor needs, never a credential. */
export interface EventActor {
  /**
   * `user` (a person or service account, with an API key or JWT), `computer` (its agent token), `worker` (a worker
   * machine's token), `operator` (the CLI), `system` (the server's own jobs).
   */
  kind: 'user' | 'computer' | 'worker' | 'operator' | 'system';
  userId?: string;
  email?: string;
  role?: string;
  /** `api_key`, `jwt` or `agent_token`, and its id where it has one. */
  credential?: string;
  credentialId?: string;
  computerId?: string;
  workerId?: string;
  /** The client's address and the request's id, when the event was raised serving a request. */
  ip?: string;
  requestId?: string;
}

/** An event as a command raises it, inside its transaction. */
export interface NewEvent<T extends EventType = EventType> {
  type: T;
  organizationId: string;
  /** The session it belongs to, for the session's stream. */
  sessionId?: string | null;
  actor?: EventActor | null;
  /** When it happened, if not now (an import of past work). */
  occurredAt?: Date;
  data: EventDataMap[T];
}

/**
 * An event that a command's one statement writes (see EventLog.statementEvents): where it is
 * selected from, and each field as a SQL expression over that, checked against the type's data.
 */
export interface StatementEvent<T extends EventType = EventType> {
  type: T;
  /** The FROM (and WHERE) of the event's row: one row, one event; none, none. */
  from: string;
  organizationId: string;
  sessionId?: string;
  /** Default: the statement's clock. */
  occurredAt?: string;
  data: { [K in keyof EventDataMap[T]]-?: string };
}

/** One statement event of any type, narrowed by `type`. */
export type AnyStatementEvent = { [T in EventType]: StatementEvent<T> }[EventType];

/** An event as stored in the log: numbered per organization once committed. */
export interface StoredEvent<T extends EventType = EventType> {
  /** Unique: receivers de-duplicate on it. */
  id: string;
  /** The organization's sequence: 1, 2, 3... with no gap, in the order the transactions committed. */
  seq: number;
  type: T;
  organizationId: string;
  sessionId: string | null;
  actor: EventActor | null;
  occurredAt: Date;
  data: EventDataMap[T];
}

/** One event of any type, narrowed by `type`. */
export type AnyStoredEvent = { [T in EventType]: StoredEvent<T> }[EventType];
