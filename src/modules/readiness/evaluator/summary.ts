import { CRITERIA, LEVEL_NAMES, passes, PILLARS, UNLOCK_SHARE } from '../domain/criteria';
import { RepositoryEvaluation } from './evaluate';
import { MAX_APPLICATIONS } from './workspace';

/** The evaluation for a person: level, applications, and each criterion by pillar with its evidence. */
export function summarize(result: RepositoryEvaluation): string {
  const { report } = result;
  const lines: string[] = [];
  const state = [
    report.branch,
    report.commitHash?.slice(0, 12),
    report.hasLocalChanges ? 'local changes' : undefined,
    report.hasNonRemoteCommits ? 'unpushed commits' : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  lines.push(`Readiness of ${report.repoUrl}${state ? ` (${state})` : ''}`);
  lines.push(`Level ${result.level}: ${LEVEL_NAMES[result.level - 1]}${nextLevel(result)}`);
  const apps = Object.entries(report.apps);
  lines.push(`${apps.length} application${apps.length === 1 ? '' : 's'}: ${apps.map(([path, app]) => `${path} (${app.description})`).join(', ')}`);
  if (result.skippedApplications > 0) lines.push(`(${result.skippedApplications} more applications not evaluated: at most ${MAX_APPLICATIONS})`);
  for (const [pillar, title] of Object.entries(PILLARS)) {
    lines.push('', title);
    for (const criterion of CRITERIA.filter((candidate) => candidate.pillar === pillar)) {
      const evaluation = report.report[criterion.id];
      const mark = passes(evaluation) ? 'PASS' : 'FAIL';
      lines.push(
        `  ${mark}  L${criterion.level} ${criterion.id.padEnd(20)} ${`${evaluation.numerator}/${evaluation.denominator}`.padEnd(6)} ${evaluation.rationale}`,
      );
    }
  }
  lines.push('', `${result.files} files in ${result.elapsedMs} ms; agentVersion ${report.agentVersion}`);
  if (result.unreadable.length > 0)
    lines.push(`Unreadable (counted as missing): ${result.unreadable.slice(0, 10).join(', ')}${result.unreadable.length > 10 ? ', ...' : ''}`);
  return lines.join('\n');
}

function nextLevel(result: RepositoryEvaluation): string {
  if (result.level >= LEVEL_NAMES.length) return '';
  const criteria = CRITERIA.filter((criterion) => criterion.level === result.level);
  const passed = criteria.filter((criterion) => passes(result.report.report[criterion.id])).length;
  const needed = Math.ceil(UNLOCK_SHARE * criteria.length);
  return ` (level ${result.level + 1} needs ${needed} of level ${result.level}'s ${criteria.length} criteria; ${passed} pass)`;
}
