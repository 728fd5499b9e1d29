/** How to install a repo's dependencies, chosen by the lockfile it has. */
export interface InstallCommand {
  lockfile: string;
  command: string;
  args: string[];
  /** How to keep the packages' own install scripts from running, for the managers that run them. */
  withoutScripts?: { args?: string[]; env?: Record<string, string> };
}

const NPM_NO_SCRIPTS = { env: { npm_config_ignore_scripts: 'true' } };

/** In order of preference: the first lockfile found names the package manager. */
const BY_LOCKFILE: ReadonlyArray<InstallCommand> = [
  { lockfile: 'pnpm-lock.yaml', command: 'pnpm', args: ['install', '--frozen-lockfile'], withoutScripts: NPM_NO_SCRIPTS },
  // Yarn 1 reads the npm setting; Yarn 2+ its own.
  {
    lockfile: 'yarn.lock',
    command: 'yarn',
    args: ['install', '--frozen-lockfile'],
    withoutScripts: { env: { ...NPM_NO_SCRIPTS.env, YARN_ENABLE_SCRIPTS: 'false' } },
  },
  { lockfile: 'bun.lock', command: 'bun', args: ['install', '--frozen-lockfile'], withoutScripts: { args: ['--ignore-scripts'] } },
  { lockfile: 'bun.lockb', command: 'bun', args: ['install', '--frozen-lockfile'], withoutScripts: { args: ['--ignore-scripts'] } },
  { lockfile: 'package-lock.json', command: 'npm', args: ['ci', '--no-audit', '--no-fund'], withoutScripts: NPM_NO_SCRIPTS },
  { lockfile: 'npm-shrinkwrap.json', command: 'npm', args: ['ci', '--no-audit', '--no-fund'], withoutScripts: NPM_NO_SCRIPTS },
  { lockfile: 'uv.lock', command: 'uv', args: ['sync', '--frozen'] },
  { lockfile: 'poetry.lock', command: 'poetry', args: ['install', '--no-interaction'] },
  { lockfile: 'Pipfile.lock', command: 'pipenv', args: ['install', '--deploy'] },
  { lockfile: 'Gemfile.lock', command: 'bundle', args: ['install'] },
  { lockfile: 'composer.lock', command: 'composer', args: ['install', '--no-interaction'] },
  { lockfile: 'Cargo.lock', command: 'cargo', args: ['fetch', '--locked'] },
  { lockfile: 'go.sum', command: 'go', args: ['mod', 'download'] },
];

/** The install command for a directory holding `files`, or null when it has no known lockfile. */
export function detectPackageManager(files: readonly string[]): InstallCommand | null {
  const present = new Set(files);
  return BY_LOCKFILE.find((entry) => present.has(entry.lockfile)) ?? null;
}

export const KNOWN_LOCKFILES = BY_LOCKFILE.map((entry) => entry.lockfile);
