import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// Untyped: semver ships no types, and @types/semver is not installed for two calls.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const semver = require('semver') as { satisfies(version: string, range: string): boolean; minVersion(range: string): { version: string } };

const ROOT = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean; os?: string[] }>;
};

/**
 * `npm install` warns EBADENGINE for every locked package whose `engines.node` excludes the running Node. The
 * versions we declare must be ones where it prints none: the lowest of each declared line, and the one running here.
 */
describe('The declared Node versions', () => {
  const declared = pkg.engines.node.split('||').map((range) => range.trim());
  const versions = [...declared.map((range) => semver.minVersion(range).version), process.versions.node];

  it('are declared in package-lock.json too (npm ci compares them)', () => {
    expect((lock.packages[''].engines as { node: string }).node).toBe(pkg.engines.node);
  });

  it.each(versions)('Node %s: every locked package accepts it, so npm install warns of none', (version) => {
    // The Node running the tests is one we declare (CI on an undeclared one would prove nothing).
    expect(semver.satisfies(version, pkg.engines.node)).toBe(true);
    const refusing = Object.entries(lock.packages)
      .filter(([path, entry]) => path && entry.engines && !Array.isArray(entry.engines) && entry.engines.node)
      .filter(([, entry]) => !semver.satisfies(version, (entry.engines as { node: string }).node))
      .map(([path, entry]) => `${path.replace(/^.*node_modules\//, '')} (node ${(entry.engines as { node: string }).node})`);
    expect(refusing).toEqual([]);
  });
});
