import Ajv, { ValidateFunction } from 'ajv';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CRITERIA, Evaluation, maturityLevel, passes, UNLOCK_SHARE } from '../../src/modules/readiness/domain/criteria';
import { canonicalRepository } from '../../src/modules/readiness/domain/repository-id';
import { EvaluatedReport, evaluateRepository, RepositoryEvaluation } from '../../src/modules/readiness/evaluator/evaluate';
import { NotARepositoryError } from '../../src/modules/readiness/evaluator/git';
import { summarize } from '../../src/modules/readiness/evaluator/summary';
import { MAX_APPLICATIONS } from '../../src/modules/readiness/evaluator/workspace';
import { runNode } from '../utils/processes';
import { commitAll, createRepo, git, packageJson, removeFixtures, tempFolder, writeFiles } from '../utils/repo-fixtures';

/**
 * The deterministic readiness evaluator (`readiness evaluate <path>`), run on real git repositories
 * built in temporary folders, in process and as the CLI an operator runs.
 */

const ROOT = join(__dirname, '..', '..');
const CLI = 'dist/cli/main.js';
/** No upload target from the environment of whoever runs the tests. */
const CLI_ENV = { AGENT_PLATFORM_URL: '', AGENT_PLATFORM_API_KEY: '' };
const cli = (...args: string[]) => runNode(CLI, args, CLI_ENV);
const NO_STACK = /\n\s+at /;
const REPORT_ID = '01936f0e-0000-7000-8000-000000000001';
const IS_ROOT = process.getuid?.() === 0;

const criteriaOf = (level: number) => CRITERIA.filter((criterion) => criterion.level === level);
const ids = (level: number) => criteriaOf(level).map((criterion) => criterion.id);
const evaluation = (result: RepositoryEvaluation, id: string): Evaluation => result.report.report[id];

/** Fails instead of waiting for ever when the evaluator hangs. */
async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The reference's ReadinessReport schema, with the spec's required fields and ranges on top (the reference's are open). */
function reportValidator(): (report: unknown) => string[] {
  const doc = JSON.parse(readFileSync(join(__dirname, '../reference/readiness-reports-api.openapi.json'), 'utf8')) as object;
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  ajv.addFormat('uri', (value: string) => /^[a-z][a-z0-9+.-]*:/i.test(value) && URL.canParse(value));
  ajv.addSchema({ ...doc, $id: 'openapi' });
  const reference: ValidateFunction = ajv.compile({ $ref: 'openapi#/components/schemas/ReadinessReport' });
  return (report) => {
    const errors = reference(report) ? [] : (reference.errors ?? []).map((error) => `${error.instancePath} ${error.message}`);
    const value = report as Record<string, unknown>;
    for (const field of ['reportId', 'createdAt', 'repoUrl', 'apps', 'report']) if (!(field in value)) errors.push(`missing ${field}`);
    for (const [id, item] of Object.entries((value.report ?? {}) as Record<string, Evaluation>)) {
      if (!(item.denominator >= 1 && item.numerator >= 0 && item.numerator <= item.denominator)) errors.push(`${id}: ${item.numerator}/${item.denominator}`);
      if (typeof item.rationale !== 'string' || item.rationale.length === 0) errors.push(`${id}: no rationale`);
    }
    return errors;
  };
}
const asUploaded = (report: EvaluatedReport) => ({ ...report, reportId: REPORT_ID, createdAt: Date.now() });

/** A JavaScript monorepo: npm workspaces, an API package with lint, types, tests and pino; a web package without. */
const MONOREPO: Record<string, string> = {
  'package.json': packageJson({ name: 'acme', private: true, workspaces: ['packages/*'] }),
  'package-lock.json': packageJson({ name: 'acme', lockfileVersion: 3, requires: true, packages: {} }),
  '.gitignore': 'node_modules/\n',
  'packages/api/package.json': packageJson({ name: '@acme/api', description: 'The Acme API server', scripts: { build: 'tsc' }, dependencies: { pino: '^9.0.0' } }),
  'packages/api/eslint.config.js': 'export default [];\n',
  'packages/api/tsconfig.json': '{ "compilerOptions": { "strict": true } }\n',
  'packages/api/src/server.ts': 'export const port = 3000;\n',
  'packages/api/src/server.test.ts': "test('port', () => undefined);\n",
  'packages/web/package.json': packageJson({ name: '@acme/web', description: 'The Acme web front end', scripts: { build: 'vite build' } }),
  'packages/web/src/main.js': 'console.log("web");\n',
};

afterAll(() => removeFixtures());

describe('Readiness evaluator: applications', () => {
  it('takes the packages of a workspace monorepo for its applications, not the root, and scores each', async () => {
    const dir = createRepo(MONOREPO);
    const result = await evaluateRepository(dir);
    const { report } = result;

    expect(Object.keys(report.apps).sort()).toEqual(['packages/api', 'packages/web']);
    expect(report.apps['packages/api']).toEqual({ description: 'The Acme API server' });
    expect(report.apps['packages/web']).toEqual({ description: 'The Acme web front end' });

    const linter = evaluation(result, 'linter');
    expect({ numerator: linter.numerator, denominator: linter.denominator }).toEqual({ numerator: 1, denominator: 2 });
    expect(linter.rationale).toContain('packages/api: packages/api/eslint.config.js');
    expect(linter.rationale).toMatch(/packages\/web: no linter \(ESLint/);

    const logging = evaluation(result, 'structured_logging');
    expect({ numerator: logging.numerator, denominator: logging.denominator }).toEqual({ numerator: 1, denominator: 2 });
    expect(logging.rationale).toContain('packages/api: pino in package.json');
    expect(logging.rationale).toMatch(/packages\/web: no structured logging/);

    expect(evaluation(result, 'type_checker')).toMatchObject({ numerator: 1, denominator: 2, rationale: expect.stringContaining('packages/api/tsconfig.json') });
    expect(evaluation(result, 'unit_tests')).toMatchObject({ numerator: 1, denominator: 2, rationale: expect.stringContaining('packages/api/src/server.test.ts') });
    expect(evaluation(result, 'lockfile')).toMatchObject({ numerator: 2, denominator: 2, rationale: expect.stringContaining('package-lock.json (repository root)') });
    expect(evaluation(result, 'build_command')).toMatchObject({ numerator: 2, denominator: 2, rationale: expect.stringContaining('script "build" in package.json') });
    // Repository-scoped criteria are scored once, whatever the number of applications.
    expect(evaluation(result, 'gitignore')).toEqual({ numerator: 1, denominator: 1, rationale: '.gitignore found' });
    for (const criterion of CRITERIA) expect([criterion.id, evaluation(result, criterion.id).denominator]).toEqual([criterion.id, criterion.scope === 'repository' ? 1 : 2]);
    expect(Object.keys(report.report)).toEqual(CRITERIA.map((criterion) => criterion.id));
  });

  it('keeps the root as an application when its package.json declares no workspaces', async () => {
    const dir = createRepo({ ...MONOREPO, 'package.json': packageJson({ name: 'acme', description: 'The Acme root' }) });
    const { report } = await evaluateRepository(dir);
    expect(Object.keys(report.apps).sort()).toEqual(['.', 'packages/api', 'packages/web']);
    expect(report.apps['.']).toEqual({ description: 'The Acme root' });
    expect(report.report.linter).toMatchObject({ numerator: 1, denominator: 3 });
  });

  it.each([
    [
      'Python',
      {
        'pyproject.toml': [
          '[project]',
          'name = "acme-py"',
          'description = "A Python service"',
          'dependencies = ["structlog>=24"]',
          '',
          '[build-system]',
          'requires = ["poetry-core"]',
          'build-backend = "poetry.core.masonry.api"',
          '',
          '[tool.ruff]',
          'line-length = 100',
          '',
          '[tool.mypy]',
          'strict = true',
          '',
        ].join('\n'),
        'poetry.lock': '# This file is automatically @generated by Poetry\n',
        'acme_py/__init__.py': '',
        'tests/test_x.py': 'def test_x():\n    assert True\n',
      },
      'A Python service',
      {
        linter: '[tool.ruff] in pyproject.toml',
        type_checker: '[tool.mypy] in pyproject.toml',
        unit_tests: 'tests/test_x.py',
        lockfile: 'poetry.lock',
        build_command: '[build-system] in pyproject.toml',
        structured_logging: 'structlog in pyproject.toml',
      },
    ],
    [
      'Go',
      {
        'go.mod': 'module example.com/acme/gosvc\n\ngo 1.22\n\nrequire go.uber.org/zap v1.27.0\n',
        'go.sum': 'go.uber.org/zap v1.27.0 h1:aJMhYGrd5QSmlpLMr2MftRKl7t8J8PTZPA732ud/XR8=\n',
        'main.go': 'package main\n\nfunc main() {}\n',
        'x_test.go': 'package main\n\nimport "testing"\n\nfunc TestX(t *testing.T) {}\n',
      },
      'example.com/acme/gosvc (go.mod)',
      {
        linter: 'Go ships go vet',
        type_checker: 'Go is statically typed',
        unit_tests: 'x_test.go',
        lockfile: 'go.sum',
        build_command: 'go build (go.mod)',
        formatter: 'Go ships gofmt',
        structured_logging: 'go.uber.org/zap in go.mod',
      },
    ],
    [
      'Rust',
      {
        'Cargo.toml': '[package]\nname = "rusty"\nversion = "0.1.0"\ndescription = "A Rust crate"\nedition = "2021"\n\n[dependencies]\ntracing-subscriber = "0.3"\n',
        'Cargo.lock': '# This file is automatically @generated by Cargo.\nversion = 3\n',
        'src/main.rs': 'fn main() {}\n',
      },
      'A Rust crate',
      {
        linter: 'Rust ships cargo clippy',
        type_checker: 'Rust is statically typed',
        lockfile: 'Cargo.lock',
        build_command: 'cargo build (Cargo.toml)',
        formatter: 'Rust ships rustfmt',
        structured_logging: 'tracing-subscriber in Cargo.toml',
      },
    ],
  ])('scores a %s project as one application at the root, naming its evidence', async (_language, files, description, evidence) => {
    const result = await evaluateRepository(createRepo(files as Record<string, string>));
    expect(result.report.apps).toEqual({ '.': { description } });
    for (const [id, rationale] of Object.entries(evidence)) expect([id, evaluation(result, id)]).toEqual([id, { numerator: 1, denominator: 1, rationale }]);
  });

  it('fails lint, type and lock checks of a Python project that configures none, saying what it looked for', async () => {
    const result = await evaluateRepository(createRepo({ 'pyproject.toml': '[project]\nname = "bare"\n', 'bare.py': 'x = 1\n' }));
    expect(result.report.apps).toEqual({ '.': { description: 'bare (pyproject.toml)' } });
    expect(evaluation(result, 'linter')).toMatchObject({ numerator: 0, denominator: 1, rationale: expect.stringMatching(/^no linter \(.*Ruff/) });
    expect(evaluation(result, 'type_checker')).toMatchObject({ numerator: 0, rationale: expect.stringMatching(/^no type checking \(.*mypy/) });
    expect(evaluation(result, 'lockfile')).toEqual({ numerator: 0, denominator: 1, rationale: 'no lockfile for python' });
    expect(evaluation(result, 'unit_tests')).toMatchObject({ numerator: 0 });
  });

  it('does not take words in a manifest\'s description for a tool in use', async () => {
    const result = await evaluateRepository(
      createRepo({
        'pyproject.toml': '[project]\nname = "reporter"\ndescription = "Posts test coverage numbers and feature flags status to Slack"\ndependencies = ["requests"]\n',
        'poetry.lock': '\n',
      }),
    );
    expect({ test_coverage: evaluation(result, 'test_coverage'), feature_flags: evaluation(result, 'feature_flags') }).toEqual({
      test_coverage: expect.objectContaining({ numerator: 0 }),
      feature_flags: expect.objectContaining({ numerator: 0 }),
    });
  });

  it(`evaluates at most ${MAX_APPLICATIONS} applications and says how many it left out`, async () => {
    const dir = tempFolder();
    const files: Record<string, string> = {};
    for (let i = 0; i < MAX_APPLICATIONS + 50; i++) files[`services/s${String(i).padStart(3, '0')}/package.json`] = packageJson({ name: `s${i}` });
    const result = await evaluateRepository(createRepo(files, { dir }));
    expect(Object.keys(result.report.apps)).toHaveLength(MAX_APPLICATIONS);
    expect(result.skippedApplications).toBe(50);
    expect(result.report.report.linter.denominator).toBe(MAX_APPLICATIONS);
    expect(summarize(result)).toContain(`50 more applications not evaluated: at most ${MAX_APPLICATIONS}`);
  });
});

describe('Readiness evaluator: repository criteria and levels', () => {
  it('flips each repository criterion from 0/1 to 1/1 when its file appears, naming the file, and changes nothing else', async () => {
    const dir = createRepo({ 'package.json': packageJson({ name: 'flip' }) });
    const steps: [string, string, string[]][] = [
      ['README.md', '# Flip\n', ['readme']],
      ['AGENTS.md', '# Agents\nRun `npm test`.\n', ['agents_md']],
      ['.github/CODEOWNERS', '* @acme/maintainers\n', ['codeowners']],
      ['.github/workflows/ci.yml', 'name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n', ['ci_pipeline']],
      [
        '.github/workflows/ci.yml',
        'name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - uses: gitleaks/gitleaks-action@v2\n',
        ['secret_scanning'],
      ],
      ['.github/dependabot.yml', 'version: 2\nupdates:\n  - package-ecosystem: npm\n    directory: /\n    schedule: { interval: weekly }\n', ['dependency_updates']],
      ['Dockerfile', 'FROM node:20\n', ['containerized']],
      ['CHANGELOG.md', '# Changelog\n\n## 1.0.0\n', ['changelog']],
    ];
    let before = await evaluateRepository(dir);
    for (const [file, content, flipped] of steps) {
      writeFiles(dir, { [file]: content });
      commitAll(dir, `add ${file}`);
      const after = await evaluateRepository(dir);
      for (const id of flipped) {
        expect([file, id, evaluation(before, id).numerator, evaluation(before, id).denominator]).toEqual([file, id, 0, 1]);
        expect([file, id, evaluation(after, id).numerator, evaluation(after, id).denominator]).toEqual([file, id, 1, 1]);
        expect([file, id, evaluation(after, id).rationale]).toEqual([file, id, expect.stringContaining(file)]);
      }
      const others = (result: RepositoryEvaluation) => Object.fromEntries(Object.entries(result.report.report).filter(([id]) => !flipped.includes(id)));
      expect([file, others(after)]).toEqual([file, others(before)]);
      before = after;
    }
    expect(evaluation(before, 'secret_scanning').rationale).toBe('gitleaks in .github/workflows/ci.yml');
  });

  /** Files that make each level-1 and level-2 criterion pass, one criterion each, over a bare package.json. */
  const LEVEL_FIXTURES: Record<string, Record<string, string>> = {
    readme: { 'README.md': '# Levels\n' },
    gitignore: { '.gitignore': 'node_modules/\n' },
    linter: { 'eslint.config.js': 'export default [];\n' },
    type_checker: { 'tsconfig.json': '{}\n' },
    unit_tests: { 'src/index.test.js': "test('x', () => undefined);\n" },
    build_command: { Makefile: 'build:\n\ttrue\n' },
    lockfile: { 'package-lock.json': '{"lockfileVersion": 3}\n' },
    agents_md: { 'AGENTS.md': '# Agents\n' },
    contributing_guide: { 'CONTRIBUTING.md': '# Contributing\n' },
    devcontainer: { '.devcontainer/devcontainer.json': '{"image": "node:20"}\n' },
    env_example: { '.env.example': 'PORT=3000\n' },
    pre_commit_hooks: { '.pre-commit-config.yaml': 'repos: []\n' },
    formatter: { '.prettierrc': '{}\n' },
    codeowners: { '.github/CODEOWNERS': '* @acme/maintainers\n' },
    issue_templates: { '.github/ISSUE_TEMPLATE/bug_report.md': '---\nname: Bug\n---\n' },
  };
  const levelRepo = (criteria: string[]) =>
    createRepo(Object.assign({ 'package.json': packageJson({ name: 'levels', description: 'levels' }), 'src/index.js': 'export {};\n' }, ...criteria.map((id) => LEVEL_FIXTURES[id])));
  const passing = (result: RepositoryEvaluation, level: number) => ids(level).filter((id) => passes(evaluation(result, id)));

  it('has a fixture for every level-1 and level-2 criterion', () => {
    expect(Object.keys(LEVEL_FIXTURES).sort()).toEqual([...ids(1), ...ids(2)].sort());
  });

  it('gives level 3 to a repository passing every level-1 and level-2 criterion', async () => {
    const result = await evaluateRepository(levelRepo([...ids(1), ...ids(2)]));
    expect(passing(result, 1)).toEqual(ids(1));
    expect(passing(result, 2)).toEqual(ids(2));
    // Precondition: the fixture does not happen to unlock level 4.
    expect(passing(result, 3).length).toBeLessThan(UNLOCK_SHARE * criteriaOf(3).length);
    expect(result.level).toBe(3);
    expect(summarize(result)).toMatch(/^Level 3: Standardized/m);
  });

  it('unlocks level 2 at exactly the share of level-1 criteria the criteria file asks for, not one fewer', async () => {
    const needed = Math.ceil(UNLOCK_SHARE * criteriaOf(1).length);
    const below = await evaluateRepository(levelRepo([...ids(1).slice(0, needed - 1), ...ids(2)]));
    expect(passing(below, 1)).toEqual(ids(1).slice(0, needed - 1));
    expect(passing(below, 2)).toEqual(ids(2));
    expect(below.level).toBe(1);
    expect(summarize(below)).toContain(`level 2 needs ${needed} of level 1's ${criteriaOf(1).length} criteria; ${needed - 1} pass`);

    const at = await evaluateRepository(levelRepo([...ids(1).slice(0, needed), ...ids(2)]));
    expect(passing(at, 1)).toEqual(ids(1).slice(0, needed));
    expect(at.level).toBe(3);
    expect(at.level).toBe(maturityLevel(at.report.report));
  });
});

describe('Readiness evaluator: determinism and git facts', () => {
  it('gives the same report twice, and from a folder inside the repository', async () => {
    const dir = createRepo(MONOREPO);
    const first = await evaluateRepository(dir);
    const second = await evaluateRepository(dir);
    const inside = await evaluateRepository(join(dir, 'packages', 'api', 'src'));
    expect(second.report).toEqual(first.report);
    expect(JSON.stringify(second.report)).toBe(JSON.stringify(first.report));
    expect(inside.report).toEqual(first.report);
    expect([second.level, inside.level]).toEqual([first.level, first.level]);
    expect(inside.root).toBe(realpathSync(dir));
  });

  it('reports the commit, the branch and local changes; without a remote, a file:// URL and unpushed commits', async () => {
    const dir = createRepo(MONOREPO);
    const clean = await evaluateRepository(dir);
    expect(clean.report).toMatchObject({
      commitHash: git(dir, 'rev-parse', 'HEAD'),
      branch: 'main',
      hasLocalChanges: false,
      repoUrl: `file://${realpathSync(dir)}`,
      hasNonRemoteCommits: true,
    });
    expect(clean.report.commitHash).toMatch(/^[0-9a-f]{40}$/);

    writeFileSync(join(dir, 'packages/web/src/main.js'), 'console.log("edited");\n');
    const edited = await evaluateRepository(dir);
    expect(edited.report.hasLocalChanges).toBe(true);
    expect(edited.report.commitHash).toBe(clean.report.commitHash);

    const next = commitAll(dir, 'edit');
    const committed = await evaluateRepository(dir);
    expect(committed.report).toMatchObject({ commitHash: next, hasLocalChanges: false });

    git(dir, 'checkout', '-q', '--detach');
    const detached = await evaluateRepository(dir);
    expect(detached.report.commitHash).toBe(next);
    expect(detached.report).not.toHaveProperty('branch');

    git(dir, 'checkout', '-q', '-b', 'feature/x');
    expect((await evaluateRepository(dir)).report.branch).toBe('feature/x');
  });

  it.each([
    ['https://user:secret@github.com/acme/api.git', 'github.com/acme/api'],
    ['https://secret@github.com/acme/api.git', 'github.com/acme/api'],
    ['http://user:secret@git.example.com:8080/acme/api', 'git.example.com/acme/api'],
    ['ssh://git:secret@github.com/acme/api.git', 'github.com/acme/api'],
  ])('keeps credentials of origin %s out of repoUrl', async (origin, repository) => {
    const dir = createRepo({ 'README.md': '# x\n' });
    git(dir, 'remote', 'add', 'origin', origin);
    const { report } = await evaluateRepository(dir);
    expect(report.repoUrl).not.toContain('secret');
    expect(URL.canParse(report.repoUrl)).toBe(true);
    expect(canonicalRepository(report.repoUrl)).toBe(repository);
  });

  it("names origin's URL when there are several remotes", async () => {
    const dir = createRepo({ 'README.md': '# x\n' });
    git(dir, 'remote', 'add', 'backup', 'https://backup.example.com/acme/api.git');
    git(dir, 'remote', 'add', 'origin', 'https://github.com/acme/api.git');
    expect((await evaluateRepository(dir)).report.repoUrl).toBe('https://github.com/acme/api.git');
  });

  it.each([
    ['an scp-like address', 'git@github.com:acme/api.git', 'github.com/acme/api'],
    ['a local path', '/srv/git/acme/api.git', '/srv/git/acme/api'],
  ])('makes a URI of a remote that git takes but that is not a URL: %s', async (_kind, origin, repository) => {
    const dir = createRepo({ 'README.md': '# x\n' });
    git(dir, 'remote', 'add', 'origin', origin);
    const { report } = await evaluateRepository(dir);
    expect(URL.canParse(report.repoUrl)).toBe(true);
    expect(canonicalRepository(report.repoUrl)).toBe(repository.startsWith('/') ? `file://${repository}` : repository);
    expect(reportValidator()(asUploaded(report))).toEqual([]);
  });

  it('tells pushed from unpushed commits in a clone of a local bare repository', async () => {
    const origin = createRepo(MONOREPO);
    const bare = join(tempFolder(), 'acme.git');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    git(origin, 'remote', 'add', 'origin', bare);
    git(origin, 'push', '-q', 'origin', 'main');
    expect((await evaluateRepository(origin)).report.hasNonRemoteCommits).toBe(false);

    const clone = join(tempFolder(), 'clone');
    execFileSync('git', ['clone', '-q', bare, clone]);
    const cloned = await evaluateRepository(clone);
    expect(cloned.report).toMatchObject({ branch: 'main', hasLocalChanges: false, hasNonRemoteCommits: false, commitHash: git(origin, 'rev-parse', 'HEAD') });

    writeFiles(clone, { 'CHANGELOG.md': '# Changelog\n' });
    const local = commitAll(clone, 'local only');
    expect((await evaluateRepository(clone)).report).toMatchObject({ commitHash: local, hasLocalChanges: false, hasNonRemoteCommits: true });

    git(clone, 'push', '-q', 'origin', 'main');
    expect((await evaluateRepository(clone)).report.hasNonRemoteCommits).toBe(false);
  });
});

describe('Readiness evaluator: odd repositories', () => {
  it('refuses a folder that is not in a git repository', async () => {
    const dir = tempFolder();
    await expect(evaluateRepository(dir)).rejects.toBeInstanceOf(NotARepositoryError);
    const result = await cli('readiness', 'evaluate', dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${dir} is not inside a git repository`);
    expect(result.stderr).not.toMatch(NO_STACK);
    expect(result.stdout).toBe('');
  });

  it('refuses a path that does not exist with a clear message, not a stack trace', async () => {
    const missing = join(tempFolder(), 'no', 'such', 'folder');
    const result = await cli('readiness', 'evaluate', missing);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(missing);
    expect(result.stderr).not.toMatch(/git is not installed/);
    expect(result.stderr).not.toMatch(NO_STACK);
  });

  it('evaluates an empty repository (no commit yet)', async () => {
    const dir = createRepo({}, { commit: false });
    const result = await evaluateRepository(dir);
    expect(result.report).not.toHaveProperty('commitHash');
    expect(result.report).toMatchObject({ branch: 'main', hasLocalChanges: false, hasNonRemoteCommits: false, repoUrl: `file://${realpathSync(dir)}` });
    expect(result.report.apps).toEqual({ '.': { description: 'the repository (no manifest found)' } });
    expect(result.level).toBe(1);
    expect(result.files).toBe(0);
    expect(reportValidator()(asUploaded(result.report))).toEqual([]);
  });

  it('neither takes ignored folders for applications nor for evidence', async () => {
    const vendored = {
      'package.json': packageJson({ name: 'lib', description: 'vendored', dependencies: { pino: '1' } }),
      'eslint.config.js': 'export default [];\n',
      'index.test.js': "test('x', () => undefined);\n",
      'Dockerfile': 'FROM scratch\n',
      'openapi.json': '{}\n',
    };
    const prefixed = (prefix: string) => Object.fromEntries(Object.entries(vendored).map(([path, text]) => [`${prefix}/${path}`, text]));
    const dir = createRepo({ '.gitignore': 'node_modules/\ngenerated/\n', 'package.json': packageJson({ name: 'app', description: 'the app' }), 'index.js': 'export {};\n' });
    writeFiles(dir, { ...prefixed('node_modules/lib'), ...prefixed('generated/lib') });

    const result = await evaluateRepository(dir);
    expect(result.report.apps).toEqual({ '.': { description: 'the app' } });
    expect(result.files).toBe(3);
    for (const id of ['linter', 'unit_tests', 'structured_logging', 'containerized', 'api_docs']) expect([id, evaluation(result, id).numerator]).toEqual([id, 0]);
    expect(JSON.stringify(result.report)).not.toMatch(/node_modules|generated|vendored/);

    // The same folder, no longer ignored, is an application and evidence: the check above can fail.
    writeFileSync(join(dir, '.gitignore'), 'node_modules/\n');
    const unignored = await evaluateRepository(dir);
    expect(Object.keys(unignored.report.apps)).toEqual(['.', 'generated/lib']);
    expect(evaluation(unignored, 'containerized').rationale).toBe('generated/lib/Dockerfile found');
  });

  it('does not hang on symlink loops, and counts a looping package.json as unreadable', async () => {
    const dir = createRepo({ 'app/package.json': packageJson({ name: 'app', description: 'the app' }), 'README.md': '# x\n' });
    symlinkSync('.', join(dir, 'loop'));
    symlinkSync('b', join(dir, 'a'));
    symlinkSync('a', join(dir, 'b'));
    mkdirSync(join(dir, 'self'));
    symlinkSync('package.json', join(dir, 'self/package.json'));
    mkdirSync(join(dir, 'ping'));
    mkdirSync(join(dir, 'pong'));
    symlinkSync('../pong/package.json', join(dir, 'ping/package.json'));
    symlinkSync('../ping/package.json', join(dir, 'pong/package.json'));
    commitAll(dir, 'links');

    const started = Date.now();
    const result = await within(10_000, evaluateRepository(dir));
    console.log(`symlink loops: evaluated in ${Date.now() - started} ms`);
    expect(Object.keys(result.report.apps)).toEqual(['app', 'ping', 'pong', 'self']);
    expect(result.report.apps.app).toEqual({ description: 'the app' });
    expect(result.unreadable).toEqual(['ping/package.json', 'pong/package.json', 'self/package.json']);
    expect(result.report.hasLocalChanges).toBe(false);
    expect(summarize(result)).toContain('Unreadable (counted as missing): ping/package.json, pong/package.json, self/package.json');
  });

  it('does not hang on a named pipe called package.json, nor on a link to one', async () => {
    const dir = createRepo({ 'app/pyproject.toml': '[project]\nname = "app"\ndescription = "the app"\n', 'README.md': '# x\n' });
    execFileSync('mkfifo', [join(dir, 'app/package.json')]);
    mkdirSync(join(dir, 'piped'));
    symlinkSync('../app/package.json', join(dir, 'piped/package.json'));

    const started = Date.now();
    const result = await within(5_000, evaluateRepository(dir));
    console.log(`named pipe: evaluated in ${Date.now() - started} ms`);
    expect(Object.keys(result.report.apps)).toEqual(['app', 'piped']);
    expect(result.report.apps.app).toEqual({ description: 'the app' });
    expect(result.unreadable).toContain('piped/package.json');
  });

  it('counts manifests it cannot read as unreadable and still evaluates', async () => {
    const dir = createRepo({ 'ok/package.json': packageJson({ name: 'ok', description: 'readable' }), 'folder/package.json/x.txt': 'x\n' });
    mkdirSync(join(dir, 'dangling'));
    symlinkSync('missing.json', join(dir, 'dangling/package.json'));
    mkdirSync(join(dir, 'dirlink'));
    symlinkSync('../folder/package.json', join(dir, 'dirlink/package.json'));
    const result = await evaluateRepository(dir);
    expect(Object.keys(result.report.apps)).toEqual(['dangling', 'dirlink', 'ok']);
    expect(result.report.apps.dangling).toEqual({ description: 'dangling (package.json)' });
    expect(result.unreadable).toEqual(['dangling/package.json', 'dirlink/package.json']);
  });

  // chmod 000 does not stop root from reading: as root the case above (links that cannot be opened) stands in for it.
  (IS_ROOT ? it.skip : it)('counts a manifest without read permission as unreadable (not as root)', async () => {
    const dir = createRepo({ 'locked/package.json': packageJson({ name: 'locked', description: 'secret description' }) });
    chmodSync(join(dir, 'locked/package.json'), 0o000);
    try {
      const result = await evaluateRepository(dir);
      expect(result.unreadable).toEqual(['locked/package.json']);
      expect(result.report.apps).toEqual({ locked: { description: 'locked (package.json)' } });
    } finally {
      chmodSync(join(dir, 'locked/package.json'), 0o644);
    }
  });

  it('reads no file outside the repository through a symlinked manifest', async () => {
    const outside = tempFolder();
    writeFileSync(join(outside, 'private.json'), packageJson({ name: 'private', description: 'OUTSIDE-SECRET-42', dependencies: { pino: '1' } }));
    const dir = createRepo({ 'README.md': '# x\n' });
    mkdirSync(join(dir, 'app'));
    symlinkSync(join(outside, 'private.json'), join(dir, 'app/package.json'));
    commitAll(dir, 'link');
    const result = await evaluateRepository(dir);
    expect(JSON.stringify(result.report)).not.toContain('OUTSIDE-SECRET-42');
    expect(evaluation(result, 'structured_logging').numerator).toBe(0);
  });
});

describe('Readiness evaluator: budget', () => {
  it('evaluates a repository of 10,000 files in under 10 seconds', async () => {
    const dir = tempFolder();
    const files: Record<string, string> = { 'package.json': packageJson({ name: 'big', private: true, workspaces: ['modules/*'] }), 'README.md': '# Big\n' };
    for (let d = 0; d < 100; d++) {
      const folder = `modules/m${String(d).padStart(2, '0')}`;
      for (let f = 0; f < 100; f++) files[`${folder}/src/file${f}.ts`] = `export const value${f} = ${f};\n`;
      if (d % 10 === 0) files[`${folder}/package.json`] = packageJson({ name: `m${d}`, description: `module ${d}`, scripts: { build: 'tsc' } });
    }
    createRepo(files, { dir });
    const started = Date.now();
    const result = await evaluateRepository(dir);
    const wallMs = Date.now() - started;
    console.log(`10,000-file repository: ${result.files} files, ${Object.keys(result.report.apps).length} applications, elapsedMs ${result.elapsedMs}, wall ${wallMs} ms`);
    expect(result.files).toBe(Object.keys(files).length);
    expect(result.files).toBeGreaterThanOrEqual(10_000);
    expect(Object.keys(result.report.apps)).toHaveLength(10);
    expect(result.elapsedMs).toBeLessThan(10_000);
    expect(wallMs).toBeLessThan(10_000);
    expect(evaluation(result, 'build_command')).toMatchObject({ numerator: 10, denominator: 10 });
  });
});

describe('Readiness evaluator: this repository', () => {
  it('evaluates the project it belongs to, and its --json report matches the reference schema', async () => {
    const result = await evaluateRepository(ROOT);
    console.log(summarize(result));
    expect(result.root).toBe(realpathSync(ROOT));
    expect(result.report.apps['.']).toBeDefined();
    expect(result.level).toBeGreaterThanOrEqual(1);
    expect(passes(evaluation(result, 'readme'))).toBe(true);
    expect(passes(evaluation(result, 'unit_tests'))).toBe(true);
    expect(result.report.agentVersion).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);

    const run = await cli('readiness', 'evaluate', ROOT, '--json');
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    const report = JSON.parse(run.stdout) as EvaluatedReport;
    expect(report.apps['.']).toBeDefined();
    expect(reportValidator()(asUploaded(report))).toEqual([]);
  });
});

describe('npm run cli -- readiness evaluate', () => {
  let dir: string;
  beforeAll(() => {
    dir = createRepo(MONOREPO);
  });

  it('prints with --json the report evaluateRepository makes, valid against the reference schema', async () => {
    const [run, summary, expected] = await Promise.all([cli('readiness', 'evaluate', dir, '--json'), cli('readiness', 'evaluate', dir), evaluateRepository(dir)]);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    const report = JSON.parse(run.stdout) as EvaluatedReport;
    expect(report).toEqual(expected.report);
    expect(reportValidator()(asUploaded(report))).toEqual([]);

    expect({ code: summary.code, stderr: summary.stderr }).toEqual({ code: 0, stderr: '' });
    expect(summary.stdout).toContain(`Readiness of file://${realpathSync(dir)} (main, ${expected.report.commitHash!.slice(0, 12)}, unpushed commits)`);
    expect(summary.stdout).toContain(`Level ${expected.level}: `);
    expect(summary.stdout).toMatch(/FAIL {2}L1 linter +1\/2 +1 of 2 applications\. packages\/api: packages\/api\/eslint\.config\.js/);
  });

  it('exits 64 with the usage on missing or unknown arguments', async () => {
    const cases = [
      [],
      ['readiness'],
      ['readiness', 'evaluate'],
      ['readiness', 'evaluate', '.', '--verbose'],
      ['readiness', 'evaluate', '.', '--upload', '--url'],
    ];
    const results = await Promise.all(cases.map((args) => cli(...args)));
    results.forEach((result, i) => {
      expect([cases[i], result.code]).toEqual([cases[i], 64]);
      expect([cases[i], result.stdout + result.stderr]).toEqual([cases[i], expect.stringContaining('readiness evaluate <path>')]);
      expect([cases[i], result.stderr]).toEqual([cases[i], expect.not.stringMatching(NO_STACK)]);
    });
  });

  it('exits 64 on --upload without a URL', async () => {
    const result = await cli('readiness', 'evaluate', dir, '--upload', '--api-key', 'apk_x');
    expect(result.code).toBe(64);
    expect(result.stderr).toMatch(/--upload needs --url and --api-key/);
    expect(result.stderr).not.toMatch(NO_STACK);
  });

  it('refuses --upload without a URL or an API key before evaluating (prints no report)', async () => {
    const result = await cli('readiness', 'evaluate', dir, '--json', '--upload');
    expect(result.code).toBe(64);
    expect(result.stdout).toBe('');
  });

  it('uploads the report with the API key, and exits 1 when the server refuses it', async () => {
    const received: { method?: string; url?: string; authorization?: string; body: unknown }[] = [];
    let status = 201;
    const server = createServer((request: IncomingMessage, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        received.push({ method: request.method, url: request.url, authorization: request.headers.authorization, body: JSON.parse(body) as unknown });
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(status === 201 ? { reportId: REPORT_ID } : { detail: 'Invalid API key' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const uploaded = await cli('readiness', 'evaluate', dir, '--upload', '--url', url, '--api-key', 'apk_test');
      expect(uploaded.code).toBe(0);
      expect(uploaded.stderr).toContain(`Uploaded as report ${REPORT_ID}`);
      expect(received).toEqual([
        { method: 'POST', url: '/api/organization/maturity-level-reports', authorization: 'Bearer apk_test', body: (await evaluateRepository(dir)).report },
      ]);

      status = 401;
      const refused = await runNode(CLI, ['readiness', 'evaluate', dir, '--upload'], { AGENT_PLATFORM_URL: url, AGENT_PLATFORM_API_KEY: 'apk_bad' });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('Upload refused (401): Invalid API key');
      expect(received[1]).toMatchObject({ authorization: 'Bearer apk_bad' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
