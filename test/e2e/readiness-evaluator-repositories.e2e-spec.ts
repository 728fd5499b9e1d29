import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalRepository } from '../../src/modules/readiness/domain/repository-id';
import { evaluateRepository } from '../../src/modules/readiness/evaluator/evaluate';
import { NotARepositoryError } from '../../src/modules/readiness/evaluator/git';
import { summarize } from '../../src/modules/readiness/evaluator/summary';
import { commitAll, createRepo, git, packageJson, removeFixtures, tempFolder, writeFiles } from '../utils/repo-fixtures';
import { asUploaded, cli, evaluation, MONOREPO, NO_STACK, reportValidator } from '../utils/fixtures/readiness-evaluator';

/** The readiness evaluator on real git repositories: the same report twice, git facts, and odd repositories. */

const IS_ROOT = process.getuid?.() === 0;

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

afterAll(() => removeFixtures());

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
      Dockerfile: 'FROM scratch\n',
      'openapi.json': '{}\n',
    };
    const prefixed = (prefix: string) => Object.fromEntries(Object.entries(vendored).map(([path, text]) => [`${prefix}/${path}`, text]));
    const dir = createRepo({
      '.gitignore': 'node_modules/\ngenerated/\n',
      'package.json': packageJson({ name: 'app', description: 'the app' }),
      'index.js': 'export {};\n',
    });
    writeFiles(dir, { ...prefixed('node_modules/lib'), ...prefixed('generated/lib') });

    const result = await evaluateRepository(dir);
    expect(result.report.apps).toEqual({ '.': { description: 'the app' } });
    expect(result.files).toBe(3);
    for (const id of ['linter', 'unit_tests', 'structured_logging', 'containerized', 'api_docs'])
      expect([id, evaluation(result, id).numerator]).toEqual([id, 0]);
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
