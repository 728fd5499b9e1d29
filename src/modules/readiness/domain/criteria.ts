/** The nine pillars of readiness, as the reference service groups its criteria. */
export const PILLARS = {
  style: 'Style & Validation',
  build: 'Build System',
  testing: 'Testing',
  documentation: 'Documentation',
  environment: 'Development Environment',
  observability: 'Debugging & Observability',
  security: 'Security',
  tasks: 'Task Discovery',
  product: 'Product & Experimentation',
} as const;
export type Pillar = keyof typeof PILLARS;

export const LEVEL_NAMES = ['Functional', 'Documented', 'Standardized', 'Optimized', 'Autonomous'] as const;

/** Evaluated once for the repository, or once for each of its applications ("3 / 4 apps pass"). */
export type CriterionScope = 'repository' | 'application';

export interface Criterion {
  id: string;
  title: string;
  pillar: Pillar;
  /** 1 to 5: the level whose unlocking it counts towards. */
  level: number;
  scope: CriterionScope;
}

const c = (id: string, title: string, pillar: Pillar, level: number, scope: CriterionScope): Criterion => ({ id, title, pillar, level, scope });

/**
 * The criteria this server's evaluator scores, and the ones levels are computed from. A report
 * may carry other well-formed ids (from another evaluator); they are kept and shown, and do not
 * count towards levels.
 */
export const CRITERIA: readonly Criterion[] = [
  c('readme', 'README at the root', 'documentation', 1, 'repository'),
  c('gitignore', '.gitignore keeps build output and secrets out of git', 'environment', 1, 'repository'),
  c('linter', 'A linter is configured', 'style', 1, 'application'),
  c('type_checker', 'Types are checked', 'style', 1, 'application'),
  c('unit_tests', 'Unit tests exist', 'testing', 1, 'application'),
  c('build_command', 'A build command is defined', 'build', 1, 'application'),
  c('lockfile', 'Dependencies are locked', 'build', 1, 'application'),
  c('agents_md', 'AGENTS.md tells agents how to work here', 'documentation', 2, 'repository'),
  c('contributing_guide', 'CONTRIBUTING guide', 'documentation', 2, 'repository'),
  c('devcontainer', 'Dev container definition', 'environment', 2, 'repository'),
  c('env_example', 'Example environment file', 'environment', 2, 'repository'),
  c('pre_commit_hooks', 'Pre-commit hooks', 'style', 2, 'repository'),
  c('formatter', 'A code formatter is configured', 'style', 2, 'application'),
  c('codeowners', 'CODEOWNERS names reviewers', 'security', 2, 'repository'),
  c('issue_templates', 'Issue templates', 'tasks', 2, 'repository'),
  c('ci_pipeline', 'Continuous integration runs on changes', 'build', 3, 'repository'),
  c('integration_tests', 'Integration or end-to-end tests exist', 'testing', 3, 'application'),
  c('secret_scanning', 'Secret scanning is configured', 'security', 3, 'repository'),
  c('dependency_updates', 'Automated dependency updates', 'security', 3, 'repository'),
  c('structured_logging', 'Structured logging library in use', 'observability', 3, 'application'),
  c('tracing_metrics', 'Tracing or metrics instrumentation', 'observability', 3, 'application'),
  c('pr_template', 'Pull request template', 'tasks', 3, 'repository'),
  c('test_coverage', 'Test coverage is measured', 'testing', 4, 'application'),
  c('containerized', 'The application builds as a container', 'environment', 4, 'repository'),
  c('api_docs', 'API or developer documentation beyond the README', 'documentation', 4, 'repository'),
  c('changelog', 'A changelog records releases', 'documentation', 4, 'repository'),
  c('feature_flags', 'Feature flags', 'product', 5, 'application'),
  c('product_analytics', 'Product analytics instrumentation', 'product', 5, 'application'),
  c('runbooks', 'Runbooks for operating the service', 'observability', 5, 'repository'),
];

/** What a criterion id in a report looks like (snake_case, at most 64 characters). */
export const CRITERION_ID_PATTERN = '^[a-z][a-z0-9_]{0,63}$';

/** Share of a level's criteria a repository must pass to unlock the next level. */
export const UNLOCK_SHARE = 0.8;

export interface Evaluation {
  numerator: number;
  denominator: number;
  rationale: string;
}

/** A criterion passes when every place it applies to passes (numerator equals denominator). */
export function passes(evaluation: Evaluation | undefined): boolean {
  return evaluation !== undefined && evaluation.numerator >= evaluation.denominator;
}

/**
 * The maturity level of a report: every repository starts at level 1 and unlocks level N+1 when it
 * passes at least 80% of level N's criteria. A criterion missing from the report counts as failed.
 */
export function maturityLevel(report: Record<string, Evaluation>): number {
  let level = 1;
  while (level < LEVEL_NAMES.length) {
    const criteria = CRITERIA.filter((criterion) => criterion.level === level);
    const passed = criteria.filter((criterion) => passes(report[criterion.id])).length;
    if (passed < UNLOCK_SHARE * criteria.length) break;
    level++;
  }
  return level;
}

/** The organization's level: the floor of the mean of its repositories' latest levels (null without any). */
export function organizationLevel(repositoryLevels: number[]): number | null {
  if (repositoryLevels.length === 0) return null;
  return Math.floor(repositoryLevels.reduce((sum, level) => sum + level, 0) / repositoryLevels.length);
}
