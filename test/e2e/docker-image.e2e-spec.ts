import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SETTING_NAMES } from '../../src/config/settings';

// Untyped: js-yaml (the version @nestjs/swagger serves /docs-yaml with) ships no types.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { load } = require('js-yaml') as { load(text: string): unknown };

const ROOT = join(__dirname, '..', '..');
const read = (...path: string[]) => readFileSync(join(ROOT, ...path), 'utf8');

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  env_file?: Array<{ path: string; required?: boolean }>;
  volumes?: string[];
  ports?: string[];
  security_opt?: string[];
  depends_on?: Record<string, unknown> | string[];
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, { name?: string } | null>;
}

/** Every setting the server reads: the schema src/config/settings.ts validates them with. */
const envKeys = (): string[] => [...SETTING_NAMES];

/**
 * The image and compose files give the computers' sandbox what it needs and keep what must survive a container (no
 * Docker daemon runs here: read, not built). What they install must match what the server checks for at a computer's
 * creation.
 */
describe('The docker image and compose files', () => {
  const dockerfile = read('docker', 'Dockerfile');
  const dockerignore = read('docker', 'Dockerfile.dockerignore');
  const embedded = load(read('docker', 'compose.yaml')) as Compose;
  const postgres = load(read('docker', 'compose.postgres.yaml')) as Compose;
  const build = dockerfile.slice(dockerfile.indexOf('AS build'), dockerfile.indexOf('AS runtime'));
  const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
  const apps = (compose: Compose) => Object.entries(compose.services).filter(([, service]) => service.build?.dockerfile === 'docker/Dockerfile');

  it('installs the sandbox programs in the runtime stage: git, bubblewrap, socat, ripgrep, util-linux (prlimit, setpriv)', () => {
    const install = /apt-get install -y --no-install-recommends ([^\\\n]+)/.exec(runtime)?.[1].split(/\s+/) ?? [];
    expect(install).toEqual(expect.arrayContaining(['git', 'bubblewrap', 'socat', 'ripgrep', 'util-linux']));
  });

  it('runs every app service of both compose files with the security options bubblewrap needs for its namespaces', () => {
    const all = [...apps(embedded), ...apps(postgres)];
    expect(all.map(([name]) => name)).toEqual(['app', 'app-1', 'app-2']);
    for (const [, app] of all) expect(app.security_opt).toEqual(['seccomp=unconfined', 'apparmor=unconfined', 'systempaths=unconfined']);
  });

  it('builds with the launcher: bin/ is copied before npm install (its prepare step), shipped, and starts the server', () => {
    const copyBin = build.indexOf('COPY bin ./bin');
    expect(copyBin).toBeGreaterThan(-1);
    expect(copyBin).toBeLessThan(build.indexOf('RUN npm install'));
    expect(build.indexOf('COPY src ./src')).toBeGreaterThan(build.indexOf('RUN npm install'));
    expect(runtime).toMatch(/COPY --from=build \/app\/bin \.\/bin/);
    expect(runtime).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    expect(/^CMD (.+)$/m.exec(runtime)?.[1]).toBe('["node", "bin/agent-platform.js", "serve"]');
    expect(existsSync(join(ROOT, 'bin', 'agent-platform.js'))).toBe(true);
  });

  it('sends the build context exactly what the Dockerfile copies from it', () => {
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1].split(/\s+/));
    const allowed = dockerignore
      .split('\n')
      .filter((line) => line.startsWith('!'))
      .map((line) => line.slice(1).replace(/\/$/, ''));
    expect(dockerignore.split('\n').filter((line) => line && !line.startsWith('#'))[0]).toBe('*');
    expect([...allowed].sort()).toEqual([...new Set(copied)].sort());
  });

  it('keeps the embedded database and its generated secrets.key in a named volume at DATA_DIR', () => {
    expect(runtime).toMatch(/DATA_DIR=\/data/);
    const app = embedded.services.app;
    expect(app.environment?.DATA_DIR).toBe('/data');
    expect(app.environment?.DATABASE_URL).toBeUndefined();
    // No SECRETS_KEY from compose: the server makes DATA_DIR/secrets.key, which then lives in the volume.
    expect(app.environment?.SECRETS_KEY).toBeUndefined();
    const [source, target] = (app.volumes ?? []).map((v) => v.split(':')).find(([, t]) => t === '/data') ?? [];
    expect(target).toBe('/data');
    expect(Object.keys(embedded.volumes ?? {})).toContain(source);
    expect(embedded.volumes![source!]?.name).toBe('agent-platform-data');
  });

  it('scales out on PostgreSQL: two app instances on one database, published only through the proxy, which checks /healthz', () => {
    const instances = apps(postgres);
    expect(instances.length).toBeGreaterThanOrEqual(2);
    expect(postgres.services.db.image).toBe('postgres:15');
    for (const [, app] of instances) {
      expect(app.environment?.DATABASE_URL).toMatch(/^postgres:\/\/[^@]+@db:5432\//);
      expect(app.environment?.TRUST_PROXY).toBeDefined();
      expect(app.ports).toBeUndefined();
      expect(app.depends_on).toHaveProperty('db');
      // The computers' workspaces: one named volume, so any instance finds what another provisioned.
      expect(app.volumes).toEqual(['computers:/data']);
    }
    expect(Object.keys(postgres.volumes ?? {})).toEqual(expect.arrayContaining(['computers', 'db-data']));

    const proxy = postgres.services.proxy;
    expect(proxy.image).toMatch(/^caddy:/);
    expect(proxy.ports).toEqual(['3000:3000']);
    const mount = proxy.volumes!.find((v) => v.endsWith(':/etc/caddy/Caddyfile:ro'))!;
    const caddyfile = read('docker', mount.split(':')[0]);
    const upstreams = /reverse_proxy ([^{]+)\{/.exec(caddyfile)![1].trim().split(/\s+/);
    expect(upstreams.sort()).toEqual(instances.map(([name]) => `${name}:3000`).sort());
    expect(caddyfile).toMatch(/health_uri \/healthz/);
    expect(caddyfile).toMatch(/flush_interval -1/);
  });

  it('reads settings from the repository root .env, which git ignores, and .env.example lists every setting', () => {
    for (const [, app] of [...apps(embedded), ...apps(postgres)]) expect(app.env_file).toEqual([{ path: '../.env', required: false }]);
    expect(read('.gitignore').split('\n')).toContain('.env');

    const example = read('.env.example');
    const listed = [...example.matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]);
    expect([...listed].sort()).toEqual([...envKeys()].sort());
    // What is not commented out must be a value the server accepts as written.
    const active = [...example.matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1], m[2]]);
    expect(active).toEqual([['BASE_URL', 'http://localhost:3000']]);
  });
});
