import { detectPackageManager } from './package-managers';

describe('detectPackageManager', () => {
  it('names npm ci for a package-lock.json', () => {
    expect(detectPackageManager(['package.json', 'package-lock.json', 'src'])).toMatchObject({ command: 'npm', args: ['ci', '--no-audit', '--no-fund'] });
  });

  it('prefers pnpm and yarn lockfiles over an npm one left behind', () => {
    expect(detectPackageManager(['package-lock.json', 'pnpm-lock.yaml'])?.command).toBe('pnpm');
    expect(detectPackageManager(['package-lock.json', 'yarn.lock'])?.command).toBe('yarn');
  });

  it('knows lockfiles beyond JavaScript', () => {
    expect(detectPackageManager(['uv.lock', 'pyproject.toml'])?.command).toBe('uv');
    expect(detectPackageManager(['Cargo.lock'])?.command).toBe('cargo');
    expect(detectPackageManager(['go.mod', 'go.sum'])?.command).toBe('go');
  });

  it('finds nothing to install without a lockfile', () => {
    expect(detectPackageManager(['package.json', 'README.md'])).toBeNull();
  });
});
