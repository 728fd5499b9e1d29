import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, TestDatabase } from '../utils/test-database';
import { ServerProcess, startServer } from '../utils/processes';

const ROOT = join(__dirname, '../..');
const GUIDE = readFileSync(join(ROOT, 'docs/getting-started.md'), 'utf8');
const run = promisify(execFile);

/** The ```sh blocks of the guide between two headings (the first starting with `from`, up to the one starting with `to`). */
function shellBlocks(from: string, to: string): string[] {
  const start = GUIDE.indexOf(`\n## ${from}`);
  const end = GUIDE.indexOf(`\n## ${to}`, start);
  if (start < 0 || end < 0) throw new Error(`getting-started.md has no section ${from} ... ${to}`);
  return [...GUIDE.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/** Every curl of the guide as [METHOD, path template]: `$VAR` path segments become `{param}`. */
function curls(): Array<[string, string]> {
  const commands = GUIDE.replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => line.includes('curl '));
  return commands.map((line) => {
    const method = /-X (\w+)/.exec(line)?.[1] ?? 'GET';
    const path = /"\$API(\/[^"?]*)/.exec(line)?.[1];
    if (!path) throw new Error(`a curl without "$API/...": ${line}`);
    return [method, path.replace(/\$[A-Z_]+/g, '{}')];
  });
}

/** The guide, tried as a reader would: its commands, run by bash, against the built `npm run demo`. */
describe('docs/getting-started.md', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let cwd: string;
  let document: { paths: Record<string, Record<string, unknown>> };

  beforeAll(async () => {
    database = await createTestDatabase();
    server = await startServer(['--demo'], database.env);
    // The reader's folder: the guide reads ./data/demo-keys.json and ./data/demo-agent-tokens.json.
    cwd = await mkdtemp(join(tmpdir(), 'ap-guide-'));
    await symlink(database.dataDir, join(cwd, 'data'));
    document = (await (await fetch(`${server.url}/docs-json`)).json()) as typeof document;
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await database?.drop();
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });

  const owner = async () => (JSON.parse(await readFile(join(database.dataDir, 'demo-keys.json'), 'utf8')) as { acme: { owner: string } }).acme.owner;
  const get = async (path: string) =>
    (await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${await owner()}` } })).json() as Promise<Record<string, unknown>>;

  it('names only operations the server has, with their methods', () => {
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, '{}')}`),
    );
    const documented = curls();
    expect(documented.length).toBeGreaterThanOrEqual(10);
    for (const [method, path] of documented) expect(operations).toContain(`${method} ${path}`);
  });

  it('takes a reader from the demo key to a session an agent answered, every command succeeding', async () => {
    // Steps 2 to 4 as one script; curl -f makes any HTTP error fail it, as a reader would notice.
    const script = ['set -euo pipefail', ...shellBlocks('2.', '5.'), 'echo "SESSION=$SESSION"']
      .join('\n')
      .replaceAll('http://127.0.0.1:3000', server.url)
      .replace(/\bcurl /g, 'curl -fsS ');
    const { stdout } = await run('bash', ['-c', script], { cwd, timeout: 60_000 });
    const sessionId = /SESSION=(\S+)/.exec(stdout)?.[1];
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const session = await get(`/api/v0/sessions/${sessionId}`);
    expect(session).toMatchObject({ status: 'idle', title: 'Add a health check' });
    const { messages } = (await get(`/api/v0/sessions/${sessionId}/messages`)) as { messages: Array<{ role: string; content: Array<{ text?: string }> }> };
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(messages[1].content[0].text).toBe('Added GET /healthz and its test.');
  });

  it('gives request examples in the OpenAPI document that succeed against the demo (acme owner)', async () => {
    const key = await owner();
    const send = (method: string, path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: method.toUpperCase(),
        headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const examples = Object.entries(document.paths).flatMap(([template, item]) =>
      Object.entries(item as Record<string, { requestBody?: { content: Record<string, { example?: unknown }> } }>)
        .filter(([, operation]) => operation.requestBody?.content['application/json']?.example !== undefined)
        .map(([method, operation]) => ({ method, template, example: operation.requestBody!.content['application/json'].example })),
    );
    const ids: Record<string, string> = {};
    // The creations first, each later one using what they made; the agent channel's need a live turn, the worker
    // channel's a worker's token (shape only).
    const tour = examples
      .filter(({ template }) => !template.includes('/agent/') && !template.startsWith('/api/v0/worker/'))
      .sort((a, b) => Number(a.template.includes('{')) - Number(b.template.includes('{')));
    expect(tour.length).toBeGreaterThanOrEqual(7);
    for (const { method, template, example } of tour) {
      const key = `${method} ${template}`;
      const path = template
        .replace('{sessionId}', ids.session ?? '')
        .replace('{computerId}', ids.computer ?? '')
        .replace('{poolId}', ids.pool ?? '');
      const res = await send(method, path, example);
      expect([key, res.status, res.status < 300 ? '' : await res.text()]).toEqual([key, expect.any(Number), '']);
      const body = (await res.json()) as { sessionId?: string; id?: string };
      if (template === '/api/v0/sessions') ids.session = body.sessionId!;
      if (template === '/api/v0/computers') ids.computer = body.id!;
      if (template === '/api/v0/worker-pools') ids.pool = body.id!;
    }
    expect(Object.keys(ids).sort()).toEqual(['computer', 'pool', 'session']);
  });
});

/** A clone has the repository and nothing beside it: every link of the README and the guide must lead inside it. */
describe('README and docs/ links', () => {
  const files = [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];

  it('has the guide: getting started, concepts, configuration, deployment, security, the API in detail', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'docs/getting-started.md',
        'docs/concepts.md',
        'docs/configuration.md',
        'docs/deployment.md',
        'docs/security.md',
        'docs/api.md',
        'docs/analytics.md',
        'docs/spec-decisions.md',
      ]),
    );
  });

  it.each(files)('%s links only to files of the repository that exist, and names no folder beside it', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    expect(text).not.toMatch(/\.\.\/shared\b|`shared\//);
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((target) => !/^(https?:|mailto:|#)/.test(target));
    for (const target of links) {
      const path = resolve(dirname(join(ROOT, file)), target.split('#')[0]);
      expect([target, path.startsWith(ROOT + '/') || path === ROOT, existsSync(path)]).toEqual([target, true, true]);
    }
  });
});
