/** Spec: "current session execution status". */
export enum SessionStatus {
  /** Nothing waiting: the agent's last turn ended and no user message arrived since. */
  Idle = 'idle',
  /** A user message waits for an agent to take it. */
  Pending = 'pending',
  /** An agent has taken the work and its turn has not ended. */
  Running = 'running',
}

export const SESSION_STATUSES = Object.values(SessionStatus);

/** What moves a session from one status to another. */
export enum SessionTrigger {
  UserMessageAdded = 'userMessageAdded',
  AgentTookWork = 'agentTookWork',
  AgentEndedTurn = 'agentEndedTurn',
  AgentLeaseExpired = 'agentLeaseExpired',
  /** An interrupted turn's agent did not end it within AGENT_INTERRUPT_GRACE_MS: the server ends it. */
  InterruptedTurnLapsed = 'interruptedTurnLapsed',
}

/**
 * The status machine as data. A user message while running keeps the session running (the agent
 * sees it when its turn ends: the session then goes back to pending rather than idle).
 * `AgentEndedTurn` lists both outcomes; which one applies depends on whether user messages
 * arrived during the turn (see `statusAfterTurn`).
 */
export const SESSION_TRANSITIONS: Readonly<Record<SessionTrigger, Partial<Record<SessionStatus, readonly SessionStatus[]>>>> = {
  [SessionTrigger.UserMessageAdded]: {
    [SessionStatus.Idle]: [SessionStatus.Pending],
    [SessionStatus.Pending]: [SessionStatus.Pending],
    [SessionStatus.Running]: [SessionStatus.Running],
  },
  [SessionTrigger.AgentTookWork]: {
    [SessionStatus.Pending]: [SessionStatus.Running],
  },
  [SessionTrigger.AgentEndedTurn]: {
    [SessionStatus.Running]: [SessionStatus.Idle, SessionStatus.Pending],
  },
  [SessionTrigger.AgentLeaseExpired]: {
    [SessionStatus.Running]: [SessionStatus.Running],
  },
  [SessionTrigger.InterruptedTurnLapsed]: {
    [SessionStatus.Running]: [SessionStatus.Idle],
  },
};

/**
 * The status `trigger` leads to, in SQL, from the status in `column`: the statements that move the status are
 * written from the machine, so the two cannot say different things. Only for triggers with one outcome per status.
 */
export function statusAfterSql(trigger: SessionTrigger, column: string): string {
  const moves = Object.entries(SESSION_TRANSITIONS[trigger]).map(([from, to]) => {
    if (to.length !== 1) throw new Error(`${trigger} has ${to.length} outcomes from ${from}: the statement must choose`);
    return `WHEN '${from}' THEN '${to[0]}'`;
  });
  return `(CASE ${column} ${moves.join(' ')} END)`;
}

export function canTransition(trigger: SessionTrigger, from: SessionStatus, to: SessionStatus): boolean {
  return SESSION_TRANSITIONS[trigger][from]?.includes(to) ?? false;
}

/**
 * The hot paths move the status inside their SQL statements; this checks each move they made
 * against the machine, so SQL and machine cannot drift apart unnoticed.
 */
export function assertTransition(trigger: SessionTrigger, from: SessionStatus, to: SessionStatus): void {
  if (!canTransition(trigger, from, to)) throw new Error(`Session status moved ${from} -> ${to} on ${trigger}, which the status machine forbids`);
}

/**
 * After a turn: pending again if user messages arrived that the agent never took, else idle. An
 * interrupted turn ends idle whatever arrived: the user stopped the work, so nothing starts again
 * until they send a message (the unanswered ones then go with it to the next turn).
 */
export function statusAfterTurn(session: { lastUserSeq: number; claimedSeq: number; turnInterruptedAt?: Date | null }): SessionStatus {
  if (session.turnInterruptedAt) return SessionStatus.Idle;
  return session.lastUserSeq > session.claimedSeq ? SessionStatus.Pending : SessionStatus.Idle;
}
