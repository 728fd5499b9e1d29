import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { evaluateRepository } from '../modules/readiness/evaluator/evaluate';
import type { UploadReportInput } from '../modules/readiness/readiness.service';

const run = promisify(execFile);

type Files = Record<string, string>;

const json = (value: unknown) => JSON.stringify(value, null, 2) + '\n';
const nodePackage = (
  name: string,
  description: string,
  extra: { scripts?: Files; dependencies?: Files; devDependencies?: Files; workspaces?: string[] } = {},
) => json({ name, description, private: true, ...extra });
const CI =
  'name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: npm ci && npm test\n';

/**
 * Acme's repositories as they grew: each step adds files (real ones, small), is committed, and is
 * evaluated by the same evaluator as `npm run cli -- readiness evaluate`, `daysAgo` days back.
 */
export const SAMPLE_REPOSITORIES: Array<{ remote: string; steps: Array<{ daysAgo: number; files: Files }> }> = [
  {
    remote: 'https://github.com/acme/payments-api',
    steps: [
      {
        daysAgo: 60,
        files: {
          'README.md': '# Payments API\n\nCharges, refunds and invoices for Acme.\n',
          '.gitignore': 'node_modules/\ndist/\n.env\n',
          'package.json': nodePackage('payments-api', 'Payments API (NestJS)', {
            scripts: { build: 'tsc -p tsconfig.json', lint: 'eslint .' },
            dependencies: { '@nestjs/core': '^11.0.0' },
            devDependencies: { typescript: '^5.6.0', eslint: '^9.0.0' },
          }),
          'package-lock.json': json({ name: 'payments-api', lockfileVersion: 3 }),
          'tsconfig.json': json({ compilerOptions: { strict: true, outDir: 'dist' } }),
          'eslint.config.mjs': 'export default [];\n',
          'src/main.ts': 'export const port = 3000;\n',
        },
      },
      {
        daysAgo: 30,
        files: {
          'AGENTS.md': '# Working here\n\nRun `npm test` before you push; never commit `.env`.\n',
          'src/payments.service.spec.ts': "it('charges', () => undefined);\n",
          '.github/workflows/ci.yml': CI,
        },
      },
      {
        daysAgo: 2,
        files: {
          'CONTRIBUTING.md': '# Contributing\n\nOne change per pull request.\n',
          '.devcontainer/devcontainer.json': json({ image: 'mcr.microsoft.com/devcontainers/typescript-node:22' }),
          '.env.example': 'DATABASE_URL=postgres://localhost/payments\n',
          '.husky/pre-commit': 'npx lint-staged\n',
          '.prettierrc': json({ singleQuote: true }),
          CODEOWNERS: '* @acme/payments\n',
          'test/payments.e2e-spec.ts': "it('charges over HTTP', () => undefined);\n",
          Dockerfile: 'FROM node:22-alpine\nCOPY dist dist\nCMD ["node", "dist/main.js"]\n',
          '.github/dependabot.yml': 'version: 2\nupdates:\n  - package-ecosystem: npm\n    directory: /\n    schedule: { interval: weekly }\n',
          'package.json': nodePackage('payments-api', 'Payments API (NestJS)', {
            scripts: { build: 'tsc -p tsconfig.json', lint: 'eslint .', test: 'jest' },
            dependencies: { '@nestjs/core': '^11.0.0', pino: '^9.0.0', '@opentelemetry/api': '^1.9.0' },
            devDependencies: { typescript: '^5.6.0', eslint: '^9.0.0', jest: '^29.0.0', supertest: '^7.0.0' },
          }),
        },
      },
    ],
  },
  {
    remote: 'https://github.com/acme/web-app.git',
    steps: [
      {
        daysAgo: 45,
        files: {
          'README.md': '# Acme web\n\nThe customer web app, the back office and their UI kit.\n',
          '.gitignore': 'node_modules/\n.next/\n',
          'package.json': nodePackage('acme-web', 'Acme web monorepo', { workspaces: ['apps/*', 'packages/*'] }),
          'package-lock.json': json({ name: 'acme-web', lockfileVersion: 3 }),
          'apps/web/package.json': nodePackage('web', 'Customer web app (Next.js)', { scripts: { build: 'next build' }, dependencies: { next: '^15.0.0' } }),
          'apps/admin/package.json': nodePackage('admin', 'Back-office admin', { scripts: { build: 'vite build' } }),
          'packages/ui/package.json': nodePackage('ui', 'Shared UI kit'),
        },
      },
      {
        daysAgo: 5,
        files: {
          'apps/web/package.json': nodePackage('web', 'Customer web app (Next.js)', {
            scripts: { build: 'next build', test: 'vitest' },
            dependencies: { next: '^15.0.0', 'posthog-js': '^1.0.0' },
            devDependencies: { typescript: '^5.6.0', eslint: '^9.0.0', prettier: '^3.0.0' },
          }),
          'apps/web/src/cart.test.ts': "it('adds to the cart', () => undefined);\n",
          'apps/admin/package.json': nodePackage('admin', 'Back-office admin', {
            scripts: { build: 'vite build' },
            devDependencies: { typescript: '^5.6.0', eslint: '^9.0.0' },
          }),
          'packages/ui/package.json': nodePackage('ui', 'Shared UI kit', { scripts: { build: 'tsc' }, devDependencies: { typescript: '^5.6.0' } }),
          '.github/workflows/ci.yml': CI,
        },
      },
    ],
  },
  {
    remote: 'git@github.com:acme/infra.git',
    steps: [
      {
        daysAgo: 10,
        files: {
          'README.md': '# Infrastructure\n\nTerraform and deployment scripts.\n',
          '.gitignore': '.terraform/\n*.tfstate\n',
          'main.tf': 'terraform {\n  required_version = ">= 1.6"\n}\n',
          CODEOWNERS: '* @acme/platform\n',
          '.github/workflows/plan.yml':
            'name: plan\non: [pull_request]\njobs:\n  plan:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: terraform plan\n',
          'docs/operations/restore.md': '# Restoring the database\n',
        },
      },
    ],
  },
];

/** A day of 2026, so the commits (and their hashes) are the same on every machine and every run. */
const COMMITTED_AT = Date.parse('2026-01-15T12:00:00Z');

export interface SampleReport {
  daysAgo: number;
  report: UploadReportInput;
}

/**
 * Builds each sample repository in `folder` step by step (files written, committed as if pushed)
 * and evaluates every step with the real evaluator: about 70 git runs, 1.4 s on two cores, beside
 * the database work of the seed.
 */
export async function evaluateSamples(folder: string): Promise<SampleReport[]> {
  const results = await Promise.all(SAMPLE_REPOSITORIES.map((repository, i) => grow(join(folder, String(i)), repository)));
  return results.flat().sort((a, b) => b.daysAgo - a.daysAgo);
}

async function grow(root: string, repository: (typeof SAMPLE_REPOSITORIES)[number]): Promise<SampleReport[]> {
  await mkdir(root, { recursive: true });
  const results: SampleReport[] = [];
  for (const [n, step] of repository.steps.entries()) {
    const date = new Date(COMMITTED_AT + n * 86_400_000).toISOString();
    const env = { ...process.env, LC_ALL: 'C', GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    const git = (...args: string[]) =>
      run('git', ['-c', 'user.name=Acme Demo', '-c', 'user.email=demo@acme.example', '-c', 'commit.gpgsign=false', ...args], { cwd: root, env });
    if (n === 0) {
      await git('init', '-q');
      await git('symbolic-ref', 'HEAD', 'refs/heads/main');
      await git('remote', 'add', 'origin', repository.remote);
    }
    for (const [path, text] of Object.entries(step.files)) {
      await mkdir(dirname(join(root, path)), { recursive: true });
      await writeFile(join(root, path), text);
    }
    await git('add', '-A');
    await git('commit', '-q', '-m', `State of ${step.daysAgo} days ago`);
    // As if pushed: the report says no local changes and no unpushed commits.
    await git('update-ref', 'refs/remotes/origin/main', 'HEAD');
    results.push({ daysAgo: step.daysAgo, report: (await evaluateRepository(root)).report });
  }
  return results;
}
