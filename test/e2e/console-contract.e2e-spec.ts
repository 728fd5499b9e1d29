import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const DOCUMENT = join(ROOT, 'web', 'src', 'api', 'generated', 'openapi.json');

type OpenApi = {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }> };
};

/**
 * The console is typed from the OpenAPI document: a contract change it does not follow must break the build
 * (`npm run build` runs these same two steps), not reach a user as a blank page. A copy of web/ is type-checked
 * against the document as it is, then against one where a field every page reads (the user's role) is renamed and a route the
 * API keys page calls is gone.
 */
describe('The console against a changed API contract', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'console-contract-'));
    cpSync(join(ROOT, 'web', 'src'), join(dir, 'web', 'src'), { recursive: true });
    cpSync(join(ROOT, 'web', 'tsconfig.json'), join(dir, 'web', 'tsconfig.json'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Generates the console's API types from `document` and type-checks the copy: the compiler's exit code and output. */
  function typeCheckAgainst(document: OpenApi): { status: number | null; output: string } {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const generator = join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
    const generated = spawnSync(process.execPath, [generator, file, '--output', join(dir, 'web', 'src', 'api', 'generated', 'api.d.ts')], { encoding: 'utf8' });
    expect(generated.status).toBe(0);
    const checked = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'web', 'tsconfig.json')], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { status: checked.status, output: checked.stdout + checked.stderr };
  }

  const current = (): OpenApi => JSON.parse(readFileSync(DOCUMENT, 'utf8')) as OpenApi;

  it('type-checks against the document the server publishes', () => {
    const { status, output } = typeCheckAgainst(current());
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('fails, naming the console files, when a field it reads is renamed or a route it calls is removed', () => {
    const changed = current();
    const user = changed.components.schemas.MeUserView;
    user.properties = Object.fromEntries(Object.entries(user.properties ?? {}).map(([name, schema]) => [name === 'role' ? 'roleName' : name, schema]));
    user.required = user.required?.map((name) => (name === 'role' ? 'roleName' : name));
    delete changed.paths['/settings/api-keys'];
    const { status, output } = typeCheckAgainst(changed);
    expect(status).not.toBe(0);
    expect(output).toMatch(/web\/src\/api\/client\.ts\(\d+,\d+\): error TS\d+: Property 'role' does not exist/);
    expect(output).toMatch(/web\/src\/pages\/ApiKeys\.tsx\(\d+,\d+\): error TS/);
  });
});
