import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CRITERIA, Evaluation, maturityLevel } from '../domain/criteria';
import { APPLICATION_CHECKS, REPOSITORY_CHECKS } from './checks';
import { gitFacts, GitFacts, listFiles, workTreeRoot } from './git';
import { loadWorkspace } from './workspace';

/** What the upload endpoint takes: the spec's report without the ids the server assigns. */
export interface EvaluatedReport extends Omit<GitFacts, 'repoUrl'> {
  repoUrl: string;
  apps: Record<string, { description: string }>;
  report: Record<string, Evaluation>;
  agentVersion: string;
}

export interface RepositoryEvaluation {
  report: EvaluatedReport;
  level: number;
  root: string;
  files: number;
  skippedApplications: number;
  unreadable: string[];
  elapsedMs: number;
}

/** This server's version, which the report names as the evaluator's. */
export const AGENT_VERSION = (JSON.parse(readFileSync(join(__dirname, '../../../../package.json'), 'utf8')) as { version: string }).version;

/**
 * Evaluates a local git repository against the criteria, deterministically: no network, no
 * model. Files come from git (tracked, and untracked but not ignored); only manifests and CI
 * files are read. The same tree always gives the same report.
 */
export async function evaluateRepository(path: string): Promise<RepositoryEvaluation> {
  const started = Date.now();
  const root = await workTreeRoot(path);
  const [files, facts] = await Promise.all([listFiles(root), gitFacts(root)]);
  const workspace = await loadWorkspace(root, files);
  const report: Record<string, Evaluation> = {};
  for (const criterion of CRITERIA) {
    if (criterion.scope === 'repository') {
      const finding = await REPOSITORY_CHECKS[criterion.id](workspace);
      report[criterion.id] = { numerator: finding.pass ? 1 : 0, denominator: 1, rationale: finding.evidence };
      continue;
    }
    const findings = await Promise.all(workspace.applications.map(async (app) => ({ app, finding: await APPLICATION_CHECKS[criterion.id](app, workspace) })));
    const passed = findings.filter(({ finding }) => finding.pass);
    const single = findings.length === 1;
    const rationale = findings.map(({ app, finding }) => (single ? finding.evidence : `${app.path}: ${finding.evidence}`)).join('; ');
    report[criterion.id] = {
      numerator: passed.length,
      denominator: findings.length,
      rationale: single ? rationale : `${passed.length} of ${findings.length} applications. ${rationale}`,
    };
  }
  const apps = Object.fromEntries(workspace.applications.map((app) => [app.path, { description: app.description }]));
  return {
    report: { ...facts, apps, report, agentVersion: AGENT_VERSION },
    level: maturityLevel(report),
    root,
    files: files.length,
    skippedApplications: workspace.skippedApplications,
    unreadable: [...workspace.unreadable].sort(),
    elapsedMs: Date.now() - started,
  };
}
