import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { join, posix } from 'node:path';

/** Files whose presence makes a folder an application, by ecosystem. */
const MANIFESTS: Record<string, string> = {
  'package.json': 'node',
  'pyproject.toml': 'python',
  'setup.py': 'python',
  'go.mod': 'go',
  'Cargo.toml': 'rust',
  'pom.xml': 'java',
  'build.gradle': 'java',
  'build.gradle.kts': 'java',
  Gemfile: 'ruby',
  'composer.json': 'php',
};

/** Folders whose manifests are not applications of the repository: vendored code, build output, test data. */
export const NOT_APPLICATIONS = /(^|\/)(node_modules|vendor|dist|build|target|\.venv|venv|fixtures|__fixtures__|testdata|\.git)(\/|$)/;

/** More applications than this are not evaluated one by one (the summary says so). */
export const MAX_APPLICATIONS = 200;
/** Manifests and CI files larger than this are read only this far. */
const MAX_READ_BYTES = 1024 * 1024;

export type Ecosystem = 'node' | 'python' | 'go' | 'rust' | 'java' | 'ruby' | 'php' | 'unknown';

export interface Application {
  /** Relative to the repository, `.` for its root. */
  path: string;
  description: string;
  ecosystems: Set<Ecosystem>;
  /** The manifests' text, by file name; unreadable ones are empty. */
  manifests: Map<string, string>;
  /** `package.json`, parsed, when there is one. */
  packageJson?: PackageJson;
  /** The application's files, relative to its folder (nested applications' files included). */
  files: string[];
}

export interface PackageJson {
  name?: string;
  description?: string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  workspaces?: unknown;
  [key: string]: unknown;
}

export interface Workspace {
  root: string;
  files: string[];
  fileSet: Set<string>;
  applications: Application[];
  /** Applications found beyond MAX_APPLICATIONS. */
  skippedApplications: number;
  /** Files the evaluator could not read. */
  unreadable: string[];
  read(path: string): Promise<string>;
}

/**
 * The repository as the criteria see it: its files, and its applications: each folder holding a
 * manifest (package.json, pyproject.toml, go.mod, Cargo.toml, ...), outside vendored code, build
 * output and test fixtures. A root that only declares workspaces is not an application itself when
 * it has some; a repository without any manifest is one application, its root.
 */
export async function loadWorkspace(root: string, files: string[]): Promise<Workspace> {
  const unreadable: string[] = [];
  const cache = new Map<string, Promise<string>>();
  const realRoot = await realpath(root);
  const read = (path: string): Promise<string> => {
    let text = cache.get(path);
    if (!text) {
      text = readInside(realRoot, join(root, path)).catch(() => {
        unreadable.push(path);
        return '';
      });
      cache.set(path, text);
    }
    return text;
  };

  const manifestDirs = new Map<string, string[]>();
  for (const file of files) {
    const name = posix.basename(file);
    if (!(name in MANIFESTS) || NOT_APPLICATIONS.test(file)) continue;
    const dir = posix.dirname(file);
    manifestDirs.set(dir, [...(manifestDirs.get(dir) ?? []), name]);
  }
  // Code-point order, not the locale's: the same tree gives the same report on every machine.
  let dirs = [...manifestDirs.keys()].sort((a, b) => (a === '.' ? -1 : b === '.' ? 1 : a < b ? -1 : a > b ? 1 : 0));
  if (dirs.length > 1 && manifestDirs.has('.') && (await declaresWorkspaces(manifestDirs.get('.')!, read, files))) dirs = dirs.filter((dir) => dir !== '.');
  if (dirs.length === 0) dirs = ['.'];
  const skippedApplications = Math.max(0, dirs.length - MAX_APPLICATIONS);
  dirs = dirs.slice(0, MAX_APPLICATIONS);

  const applications: Application[] = [];
  for (const dir of dirs) {
    const manifests = new Map<string, string>();
    for (const name of manifestDirs.get(dir) ?? []) manifests.set(name, await read(dir === '.' ? name : `${dir}/${name}`));
    const packageJson = manifests.has('package.json') ? parseJson(manifests.get('package.json')!) : undefined;
    const ecosystems = new Set<Ecosystem>([...manifests.keys()].map((name) => MANIFESTS[name] as Ecosystem));
    if (ecosystems.size === 0) ecosystems.add('unknown');
    const prefix = dir === '.' ? '' : `${dir}/`;
    applications.push({
      path: dir,
      description: describe(dir, manifests, packageJson),
      ecosystems,
      manifests,
      packageJson,
      files: prefix ? files.filter((file) => file.startsWith(prefix)).map((file) => file.slice(prefix.length)) : files,
    });
  }
  return { root, files, fileSet: new Set(files), applications, skippedApplications, unreadable, read };
}

async function declaresWorkspaces(names: string[], read: (path: string) => Promise<string>, files: string[]): Promise<boolean> {
  if (files.includes('pnpm-workspace.yaml') || files.includes('go.work') || files.includes('lerna.json')) return true;
  if (names.includes('package.json') && parseJson(await read('package.json'))?.workspaces !== undefined) return true;
  if (names.includes('Cargo.toml') && /^\[workspace\]/m.test(await read('Cargo.toml'))) return true;
  return false;
}

function describe(dir: string, manifests: Map<string, string>, packageJson?: PackageJson): string {
  if (packageJson?.description) return String(packageJson.description).slice(0, 500);
  for (const text of manifests.values()) {
    const match = /^\s*description\s*=\s*"([^"\n]*)"/m.exec(text);
    if (match?.[1]) return match[1].slice(0, 500);
  }
  const name =
    packageJson?.name ??
    /^\s*name\s*=\s*"([^"\n]*)"/m.exec([...manifests.values()].join('\n'))?.[1] ??
    /^module\s+(\S+)/m.exec(manifests.get('go.mod') ?? '')?.[1];
  const kinds = [...manifests.keys()].join(', ');
  if (name) return `${String(name)} (${kinds})`;
  return manifests.size > 0 ? `${dir === '.' ? 'the repository root' : dir} (${kinds})` : 'the repository (no manifest found)';
}

function parseJson(text: string): PackageJson | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as PackageJson) : undefined;
  } catch {
    return undefined;
  }
}

/** A file of the repository; one that resolves (through links) outside it is refused, not read. */
async function readInside(realRoot: string, path: string): Promise<string> {
  const real = await realpath(path);
  if (real !== realRoot && !real.startsWith(`${realRoot}/`)) throw new Error(`${path} points outside the repository`);
  return readBounded(real);
}

/** At most MAX_READ_BYTES; non-blocking, so a named pipe (or a link to one) cannot stall the evaluator. */
async function readBounded(path: string): Promise<string> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const buffer = Buffer.alloc(MAX_READ_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, MAX_READ_BYTES, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}
