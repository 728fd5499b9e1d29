import { assertTransition, canTransition, SessionStatus, SessionTrigger, statusAfterSql, statusAfterTurn } from './session-status';

describe('session status', () => {
  it('a user message makes an idle or pending session pending and keeps a running one running', () => {
    expect(canTransition(SessionTrigger.UserMessageAdded, SessionStatus.Idle, SessionStatus.Pending)).toBe(true);
    expect(canTransition(SessionTrigger.UserMessageAdded, SessionStatus.Pending, SessionStatus.Pending)).toBe(true);
    expect(canTransition(SessionTrigger.UserMessageAdded, SessionStatus.Running, SessionStatus.Running)).toBe(true);
    expect(canTransition(SessionTrigger.UserMessageAdded, SessionStatus.Running, SessionStatus.Pending)).toBe(false);
    expect(canTransition(SessionTrigger.UserMessageAdded, SessionStatus.Idle, SessionStatus.Idle)).toBe(false);
  });

  it('the statement adding a message moves the status as the machine says, and a trigger with two outcomes has no SQL form', () => {
    expect(statusAfterSql(SessionTrigger.UserMessageAdded, 's.status')).toBe(
      "(CASE s.status WHEN 'idle' THEN 'pending' WHEN 'pending' THEN 'pending' WHEN 'running' THEN 'running' END)",
    );
    expect(() => statusAfterSql(SessionTrigger.AgentEndedTurn, 's.status')).toThrow(/2 outcomes/);
  });

  it('ending a turn gives idle when the agent took every user message, pending when more arrived', () => {
    expect(statusAfterTurn({ lastUserSeq: 3, claimedSeq: 3 })).toBe(SessionStatus.Idle);
    expect(statusAfterTurn({ lastUserSeq: 5, claimedSeq: 3 })).toBe(SessionStatus.Pending);
  });

  it('both outcomes of a turn are allowed transitions', () => {
    expect(canTransition(SessionTrigger.AgentEndedTurn, SessionStatus.Running, SessionStatus.Idle)).toBe(true);
    expect(canTransition(SessionTrigger.AgentEndedTurn, SessionStatus.Running, SessionStatus.Pending)).toBe(true);
  });

  it('assertTransition refuses a move the machine forbids', () => {
    expect(() => assertTransition(SessionTrigger.AgentTookWork, SessionStatus.Idle, SessionStatus.Running)).toThrow(/forbids/);
    expect(() => assertTransition(SessionTrigger.UserMessageAdded, SessionStatus.Idle, SessionStatus.Pending)).not.toThrow();
  });

  it('agents take only pending work and end only running turns', () => {
    expect(canTransition(SessionTrigger.AgentTookWork, SessionStatus.Pending, SessionStatus.Running)).toBe(true);
    expect(canTransition(SessionTrigger.AgentTookWork, SessionStatus.Idle, SessionStatus.Running)).toBe(false);
    expect(canTransition(SessionTrigger.AgentEndedTurn, SessionStatus.Idle, SessionStatus.Idle)).toBe(false);
    expect(canTransition(SessionTrigger.AgentEndedTurn, SessionStatus.Pending, SessionStatus.Idle)).toBe(false);
  });

  it('an interrupted turn ends idle even when user messages arrived, and only a running turn lapses', () => {
    expect(statusAfterTurn({ lastUserSeq: 5, claimedSeq: 3, turnInterruptedAt: new Date() })).toBe(SessionStatus.Idle);
    expect(statusAfterTurn({ lastUserSeq: 5, claimedSeq: 3, turnInterruptedAt: null })).toBe(SessionStatus.Pending);
    expect(canTransition(SessionTrigger.InterruptedTurnLapsed, SessionStatus.Running, SessionStatus.Idle)).toBe(true);
    expect(canTransition(SessionTrigger.InterruptedTurnLapsed, SessionStatus.Running, SessionStatus.Pending)).toBe(false);
    expect(canTransition(SessionTrigger.InterruptedTurnLapsed, SessionStatus.Pending, SessionStatus.Idle)).toBe(false);
  });
});
