import { readFileSync, realpathSync } from 'node:fs';
import { createServer, IncomingMessage } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { passes } from '../../src/modules/readiness/domain/criteria';
import { EvaluatedReport, evaluateRepository } from '../../src/modules/readiness/evaluator/evaluate';
import { summarize } from '../../src/modules/readiness/evaluator/summary';
import { childrenCpuMillisOf } from '../utils/process-state';
import { runNode } from '../utils/processes';
import { createRepo, packageJson, removeFixtures, tempFolder } from '../utils/repo-fixtures';
import { asUploaded, CLI, cli, evaluation, MONOREPO, NO_STACK, REPORT_ID, reportValidator } from '../utils/fixtures/readiness-evaluator';

/** The readiness evaluator's budget, its report of this repository, and `npm run cli -- readiness evaluate` as a real process. */

const ROOT = join(__dirname, '..', '..');

afterAll(() => removeFixtures());

describe('Readiness evaluator: budget', () => {
  it('evaluates a repository of 10,000 files in under 10 seconds of CPU', async () => {
    const dir = tempFolder();
    const files: Record<string, string> = { 'package.json': packageJson({ name: 'big', private: true, workspaces: ['modules/*'] }), 'README.md': '# Big\n' };
    for (let d = 0; d < 100; d++) {
      const folder = `modules/m${String(d).padStart(2, '0')}`;
      for (let f = 0; f < 100; f++) files[`${folder}/src/file${f}.ts`] = `export const value${f} = ${f};\n`;
      if (d % 10 === 0) files[`${folder}/package.json`] = packageJson({ name: `m${d}`, description: `module ${d}`, scripts: { build: 'tsc' } });
    }
    createRepo(files, { dir });
    // The evaluator runs in this process, and git in children it waits for: their CPU time is what the evaluation
    // cost, which a busy machine does not inflate as it does the wall-clock time (a second or less on a quiet one).
    const started = Date.now();
    const cpuBefore = process.cpuUsage();
    const childrenBefore = childrenCpuMillisOf(process.pid);
    const result = await evaluateRepository(dir);
    const cpu = process.cpuUsage(cpuBefore);
    const cpuMs = Math.round((cpu.user + cpu.system) / 1000) + childrenCpuMillisOf(process.pid) - childrenBefore;
    const wallMs = Date.now() - started;
    console.log(
      `10,000-file repository: ${result.files} files, ${Object.keys(result.report.apps).length} applications, elapsedMs ${result.elapsedMs}, wall ${wallMs} ms, CPU ${cpuMs} ms`,
    );
    expect(result.files).toBe(Object.keys(files).length);
    expect(result.files).toBeGreaterThanOrEqual(10_000);
    expect(Object.keys(result.report.apps)).toHaveLength(10);
    expect(cpuMs).toBeLessThan(10_000);
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
    const [run, summary, expected] = await Promise.all([
      cli('readiness', 'evaluate', dir, '--json'),
      cli('readiness', 'evaluate', dir),
      evaluateRepository(dir),
    ]);
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
