import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The image and compose file give the computers' sandbox what it needs (no Docker daemon runs here: read, not built).
 * What they install must match what the server checks for at a computer's creation.
 */
describe('The docker image and compose file', () => {
  const dockerfile = readFileSync(join(__dirname, '..', '..', 'docker', 'Dockerfile'), 'utf8');
  const compose = readFileSync(join(__dirname, '..', '..', 'docker', 'compose.yaml'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));

  it('installs the sandbox programs in the runtime stage: git, bubblewrap, socat, ripgrep, util-linux (prlimit, setpriv)', () => {
    const install = /apt-get install -y --no-install-recommends ([^\\\n]+)/.exec(runtime)?.[1].split(/\s+/) ?? [];
    expect(install).toEqual(expect.arrayContaining(['git', 'bubblewrap', 'socat', 'ripgrep', 'util-linux']));
  });

  it('runs the app with the security options bubblewrap needs for its namespaces', () => {
    const app = compose.slice(compose.indexOf('\n  app:'));
    const options = /security_opt:\n((?:\s+- .+\n)+)/.exec(app)?.[1].split('\n').map((line) => line.trim().replace(/^- /, '')).filter(Boolean);
    expect(options).toEqual(['seccomp=unconfined', 'apparmor=unconfined', 'systempaths=unconfined']);
  });
});
