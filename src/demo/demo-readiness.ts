import { Injectable } from '@nestjs/common';
import { Principal } from '../modules/auth';
import { ReadinessService, UploadReportInput } from '../modules/readiness';
import { CRITERIA } from '../modules/readiness/domain/criteria';

const DAY_MS = 86_400_000;

/** A repository's evaluations over time: days ago, and the criteria that passed then. */
const HISTORY: Array<{ repoUrl: string; apps: Record<string, { description: string }>; runs: Array<{ daysAgo: number; passing: string[] }> }> = [
  {
    repoUrl: 'https://github.com/acme/payments-api',
    apps: { '.': { description: 'Payments API (NestJS)' } },
    runs: [
      { daysAgo: 60, passing: ['readme', 'gitignore', 'linter', 'type_checker', 'build_command', 'lockfile'] },
      { daysAgo: 30, passing: ['readme', 'gitignore', 'linter', 'type_checker', 'unit_tests', 'build_command', 'lockfile', 'agents_md', 'ci_pipeline'] },
      {
        daysAgo: 2,
        passing: [
          'readme', 'gitignore', 'linter', 'type_checker', 'unit_tests', 'build_command', 'lockfile', 'agents_md', 'contributing_guide', 'devcontainer',
          'env_example', 'pre_commit_hooks', 'formatter', 'codeowners', 'ci_pipeline', 'integration_tests', 'structured_logging', 'containerized',
        ],
      },
    ],
  },
  {
    repoUrl: 'https://github.com/acme/web-app.git',
    apps: { 'apps/web': { description: 'Customer web app (Next.js)' }, 'apps/admin': { description: 'Back-office admin' }, 'packages/ui': { description: 'Shared UI kit' } },
    runs: [
      { daysAgo: 45, passing: ['readme', 'gitignore', 'lockfile', 'build_command'] },
      { daysAgo: 5, passing: ['readme', 'gitignore', 'lockfile', 'build_command', 'linter', 'type_checker', 'unit_tests', 'formatter', 'ci_pipeline'] },
    ],
  },
  {
    repoUrl: 'git@github.com:acme/infra.git',
    apps: { '.': { description: 'Terraform and deployment scripts' } },
    runs: [{ daysAgo: 10, passing: ['readme', 'gitignore', 'ci_pipeline', 'codeowners'] }],
  },
];

/**
 * Readiness reports for acme's repositories over the last two months, as the evaluator would
 * have uploaded them. Only an organization without reports gets them.
 */
@Injectable()
export class DemoReadiness {
  constructor(private readonly readiness: ReadinessService) {}

  async seedAcme(uploader: Principal): Promise<void> {
    if ((await this.readiness.list(uploader, { limit: 1 })).length > 0) return;
    const now = Date.now();
    for (const repository of HISTORY) {
      for (const run of repository.runs) {
        await this.readiness.upload(uploader, report(repository.repoUrl, repository.apps, run.passing), new Date(now - run.daysAgo * DAY_MS));
      }
    }
  }
}

function report(repoUrl: string, apps: Record<string, { description: string }>, passing: string[]): UploadReportInput {
  const appCount = Object.keys(apps).length;
  const evaluations = Object.fromEntries(
    CRITERIA.map((criterion) => {
      const denominator = criterion.scope === 'application' ? appCount : 1;
      const passed = passing.includes(criterion.id);
      return [criterion.id, { numerator: passed ? denominator : 0, denominator, rationale: passed ? `${criterion.title}: found` : `${criterion.title}: not found` }];
    }),
  );
  return { repoUrl, apps, report: evaluations, branch: 'main', hasLocalChanges: false, hasNonRemoteCommits: false, agentVersion: '0.1.0' };
}
