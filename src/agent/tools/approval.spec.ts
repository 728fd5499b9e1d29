import { approvalNeeded, callSummary } from './approval';

describe('approvalNeeded', () => {
  const rules = [{ commandPatterns: ['git push*', 'rm -rf*'] }, { tools: ['Edit'] }];

  it('names the tools whose every call needs approval, from either set of rules', () => {
    expect(approvalNeeded(rules, 'Edit', { file_path: 'a' })).toMatch(/every Edit call/);
    expect(approvalNeeded(rules, 'Create', { file_path: 'a' })).toBeNull();
    expect(approvalNeeded([undefined, { tools: ['Create'] }], 'Create', {})).not.toBeNull();
  });

  it('matches commands wherever they stand in the line, as the denylist does', () => {
    expect(approvalNeeded(rules, 'Execute', { command: 'git push origin main' })).toMatch(/git push\*/);
    expect(approvalNeeded(rules, 'Execute', { command: 'make && git push' })).not.toBeNull();
    expect(approvalNeeded(rules, 'Execute', { command: 'sudo rm -rf build' })).not.toBeNull();
    expect(approvalNeeded(rules, 'Execute', { command: 'echo "$(git push)"' })).not.toBeNull();
    expect(approvalNeeded(rules, 'Execute', { command: 'git status' })).toBeNull();
  });

  it('a command line that cannot be checked needs approval', () => {
    expect(approvalNeeded(rules, 'Execute', { command: 'eval "$X"' })).not.toBeNull();
  });

  it('needs nothing without rules', () => {
    expect(approvalNeeded([undefined, {}], 'Execute', { command: 'rm -rf /' })).toBeNull();
  });
});

describe('callSummary', () => {
  it('is the command line for a command, the tool and its arguments otherwise, cut to 2000 characters', () => {
    expect(callSummary('Execute', { command: 'git push' })).toBe('git push');
    expect(callSummary('Edit', { file_path: 'a.txt' })).toBe('Edit {"file_path":"a.txt"}');
    expect(callSummary('Execute', { command: 'x'.repeat(5000) })).toHaveLength(2000);
  });
});
