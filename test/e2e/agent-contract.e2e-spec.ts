import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const DOCUMENT = join(ROOT, 'web', 'src', 'api', 'generated', 'openapi.json');
const CONTRACT_TYPES = join(ROOT, 'src', 'contract', 'generated', 'openapi.d.ts');
const GENERATOR = join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
/** As bin/agent-platform.js generates the contract's types. */
const GENERATOR_OPTIONS = ['--empty-objects-unknown', '--default-non-nullable', 'false'];

type OpenApi = {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }> };
};

/**
 * The agent is built from src/agent and src/contract alone, and src/contract takes the agent channel's types from the
 * server's OpenAPI document (generated at build time). The types in the tree must be those of the document the server
 * publishes now, the agent must compile with nothing of the server, and a change of the channel it does not follow
 * must fail that compile.
 */
describe("The agent against the agent channel's contract", () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'agent-contract-'));
    // The worker (with the host library it runs computers with) shares the contract on the same terms.
    for (const folder of ['agent', 'contract', 'host', 'worker']) cpSync(join(ROOT, 'src', folder), join(dir, 'src', folder), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    // The root's compiler options; the agent's program files only (its unit tests are the root's).
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: join(ROOT, 'tsconfig.json'),
        compilerOptions: { rootDir: '.', noEmit: true, incremental: false, types: ['node'] },
        include: ['src'],
        exclude: ['src/**/*.spec.ts'],
      }),
    );
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The contract's types generated from `document` into `out`. */
  function generate(document: string, out: string): void {
    const generated = spawnSync(process.execPath, [GENERATOR, document, ...GENERATOR_OPTIONS, '--output', out], { encoding: 'utf8' });
    expect(generated.status).toBe(0);
  }

  /** Generates the copy's contract types from `document` and type-checks the copy: the compiler's exit code and output. */
  function typeCheckAgainst(document: OpenApi): { status: number | null; output: string } {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    generate(file, join(dir, 'src', 'contract', 'generated', 'openapi.d.ts'));
    const checked = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json')], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { status: checked.status, output: checked.stdout + checked.stderr };
  }

  const current = (): OpenApi => JSON.parse(readFileSync(DOCUMENT, 'utf8')) as OpenApi;

  it('has in the tree the types generated from the document the built server exports', () => {
    const exported = join(dir, 'exported.json');
    const run = spawnSync(process.execPath, [join(ROOT, 'dist', 'tools', 'export-openapi.js'), exported], { encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    generate(exported, join(dir, 'fresh.d.ts'));
    expect(readFileSync(join(dir, 'fresh.d.ts'), 'utf8')).toBe(readFileSync(CONTRACT_TYPES, 'utf8'));
  });

  it('compiles from src/agent and src/contract alone (and the worker with src/host), against the document the server publishes', () => {
    const { status, output } = typeCheckAgainst(current());
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('fails to compile, naming the files, when a field the agent reads is renamed or an operation it calls is removed', () => {
    const changed = current();
    const heartbeat = changed.components.schemas.HeartbeatResponse;
    heartbeat.properties = Object.fromEntries(
      Object.entries(heartbeat.properties ?? {}).map(([name, schema]) => [name === 'interrupted' ? 'stopping' : name, schema]),
    );
    heartbeat.required = heartbeat.required?.map((name) => (name === 'interrupted' ? 'stopping' : name));
    delete changed.paths['/api/v0/agent/sessions/{sessionId}/end-turn'];
    const { status, output } = typeCheckAgainst(changed);
    expect(status).not.toBe(0);
    expect(output).toMatch(/src\/agent\/agent\.ts\(\d+,\d+\): error TS\d+: Property 'interrupted' does not exist/);
    expect(output).toMatch(
      /src\/contract\/agent-channel\.ts\(\d+,\d+\): error TS\d+: Property '\/api\/v0\/agent\/sessions\/\{sessionId\}\/end-turn' does not exist on type 'paths'/,
    );
  });
});
