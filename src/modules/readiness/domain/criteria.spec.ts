import { CRITERIA, Evaluation, LEVEL_NAMES, maturityLevel, organizationLevel, PILLARS } from './criteria';

const pass: Evaluation = { numerator: 1, denominator: 1, rationale: 'ok' };
const fail: Evaluation = { numerator: 0, denominator: 1, rationale: 'missing' };

function reportPassing(levels: Record<number, number>): Record<string, Evaluation> {
  const report: Record<string, Evaluation> = {};
  for (const level of [1, 2, 3, 4, 5]) {
    const criteria = CRITERIA.filter((criterion) => criterion.level === level);
    const count = Math.round((levels[level] ?? 0) * criteria.length);
    criteria.forEach((criterion, i) => (report[criterion.id] = i < count ? pass : fail));
  }
  return report;
}

describe('criteria', () => {
  it('has at least 20 criteria over the nine pillars and five levels, with unique ids', () => {
    expect(CRITERIA.length).toBeGreaterThanOrEqual(20);
    expect(new Set(CRITERIA.map((criterion) => criterion.id)).size).toBe(CRITERIA.length);
    expect(new Set(CRITERIA.map((criterion) => criterion.pillar))).toEqual(new Set(Object.keys(PILLARS)));
    expect(new Set(CRITERIA.map((criterion) => criterion.level))).toEqual(new Set([1, 2, 3, 4, 5]));
    expect(LEVEL_NAMES).toHaveLength(5);
  });
});

describe('maturityLevel', () => {
  it('starts every repository at level 1', () => {
    expect(maturityLevel({})).toBe(1);
    expect(maturityLevel(reportPassing({ 1: 0.5 }))).toBe(1);
  });

  it("unlocks the next level at 80% of a level's criteria, not below", () => {
    expect(maturityLevel(reportPassing({ 1: 1 }))).toBe(2);
    expect(maturityLevel(reportPassing({ 1: 6 / 7 }))).toBe(2);
    expect(maturityLevel(reportPassing({ 1: 5 / 7 }))).toBe(1);
    expect(maturityLevel(reportPassing({ 1: 1, 2: 1, 3: 1 }))).toBe(4);
    expect(maturityLevel(reportPassing({ 1: 1, 2: 1, 3: 1, 4: 1 }))).toBe(5);
  });

  it('never skips a level: passing level 3 without level 2 stays at 2', () => {
    expect(maturityLevel(reportPassing({ 1: 1, 2: 0, 3: 1, 4: 1 }))).toBe(2);
  });

  it('counts an application criterion as passed only when every application passes', () => {
    const report = reportPassing({ 1: 1 });
    report.linter = { numerator: 2, denominator: 3, rationale: '2 of 3 apps' };
    report.unit_tests = { numerator: 0, denominator: 3, rationale: '0 of 3 apps' };
    expect(maturityLevel(report)).toBe(1);
  });
});

describe('organizationLevel', () => {
  it("is the floor of the mean of the repositories' levels", () => {
    expect(organizationLevel([2, 3])).toBe(2);
    expect(organizationLevel([3, 3, 4])).toBe(3);
    expect(organizationLevel([5])).toBe(5);
    expect(organizationLevel([])).toBeNull();
  });
});
