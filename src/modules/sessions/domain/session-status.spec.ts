import { canTransition, SessionStatus, SessionTrigger, statusAfterTurn, statusAfterUserMessage } from './session-status';

describe('session status', () => {
  it('a user message makes an idle or pending session pending and keeps a running one running', () => {
    expect(statusAfterUserMessage(SessionStatus.Idle)).toBe(SessionStatus.Pending);
    expect(statusAfterUserMessage(SessionStatus.Pending)).toBe(SessionStatus.Pending);
    expect(statusAfterUserMessage(SessionStatus.Running)).toBe(SessionStatus.Running);
  });

  it('ending a turn gives idle when the agent took every user message, pending when more arrived', () => {
    expect(statusAfterTurn({ lastUserSeq: 3, claimedSeq: 3 })).toBe(SessionStatus.Idle);
    expect(statusAfterTurn({ lastUserSeq: 5, claimedSeq: 3 })).toBe(SessionStatus.Pending);
  });

  it('every outcome of the helpers is an allowed transition', () => {
    for (const from of Object.values(SessionStatus)) {
      expect(canTransition(SessionTrigger.UserMessageAdded, from, statusAfterUserMessage(from))).toBe(true);
    }
    expect(canTransition(SessionTrigger.AgentEndedTurn, SessionStatus.Running, SessionStatus.Idle)).toBe(true);
    expect(canTransition(SessionTrigger.AgentEndedTurn, SessionStatus.Running, SessionStatus.Pending)).toBe(true);
  });

  it('agents take only pending work and end only running turns', () => {
    expect(canTransition(SessionTrigger.AgentTookWork, SessionStatus.Pending, SessionStatus.Running)).toBe(true);
    expect(canTransition(SessionTrigger.AgentTookWork, SessionStatus.Idle, SessionStatus.Running)).toBe(false);
    expect(canTransition(SessionTrigger.AgentEndedTurn, SessionStatus.Idle, SessionStatus.Idle)).toBe(false);
    expect(canTransition(SessionTrigger.AgentEndedTurn, SessionStatus.Pending, SessionStatus.Idle)).toBe(false);
  });
});
