import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evaluateSamples } from '../../src/demo/readiness-samples';

/** Criteria a report passes whole. */
const passed = (report: { report: Record<string, { numerator: number; denominator: number }> }) =>
  Object.entries(report.report)
    .filter(([, score]) => score.denominator > 0 && score.numerator === score.denominator)
    .map(([id]) => id);

/**
 * The demo's readiness history is made at seed time by the real evaluator from sample repositories
 * it builds and commits step by step: the reports must read as a real history would.
 */
describe('the demo readiness samples', () => {
  it('are real commits evaluated step by step, each step passing what it added', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'demo-samples-'));
    try {
      const evaluated = await evaluateSamples(folder);
      expect(evaluated.map((r) => r.daysAgo)).toEqual([60, 45, 30, 10, 5, 2]);
      // Real commits, pushed, no local changes: what a clean checkout reports.
      for (const { report } of evaluated) {
        expect(report).toMatchObject({
          commitHash: expect.stringMatching(/^[0-9a-f]{40}$/),
          branch: 'main',
          hasLocalChanges: false,
          hasNonRemoteCommits: false,
        });
      }
      const payments = evaluated.filter((r) => r.report.repoUrl === 'https://github.com/acme/payments-api').map((r) => passed(r.report));
      expect(payments).toHaveLength(3);
      // Each step keeps what passed before and passes what its files add.
      expect(payments[1]).toEqual(expect.arrayContaining(payments[0]));
      expect(payments[2]).toEqual(expect.arrayContaining(payments[1]));
      expect(payments[0]).toEqual(expect.arrayContaining(['readme', 'gitignore', 'linter']));
      expect(payments[0]).not.toContain('agents_md');
      expect(payments[1]).toContain('agents_md');
      expect(payments[2].length).toBeGreaterThan(payments[1].length);
      // The same files and dates make the same commits on every machine.
      const again = await evaluateSamples(join(folder, 'again'));
      expect(again.map((r) => r.report.commitHash)).toEqual(evaluated.map((r) => r.report.commitHash));
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
