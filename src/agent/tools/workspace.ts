import { lstat, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { errorCode, ToolError } from './common';
import { PathRules } from './path-rules';
import { ToolContext } from './tool';

/** A path inside the workspace: absolute (through the real workspace folder) and as the model sees it. */
export interface WorkspacePath {
  /** The real workspace folder (symlinks resolved). */
  root: string;
  /** The path, with `..` and the symlinks of its existing parents (and of itself, when it exists) resolved. */
  absolute: string;
  /** `absolute` relative to `root`; `.` for the root itself. */
  relative: string;
}

/** The real path of the workspace folder; a ToolError when it is not a folder. */
export async function workspaceRoot(context: ToolContext): Promise<string> {
  const workspace = resolve(context.workspace);
  try {
    const root = await realpath(workspace);
    if (!(await stat(root)).isDirectory()) throw new ToolError(`The workspace ${workspace} is not a folder`);
    return root;
  } catch (error) {
    if (error instanceof ToolError) throw error;
    throw new ToolError(`The workspace ${workspace} is not available (${errorCode(error) ?? String(error)})`);
  }
}

/** True when `path` is `root` or lies under it (both absolute and normalized). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** `absolute` as the model sees it: relative to the workspace root, `.` for the root. */
export const displayPath = (root: string, absolute: string): string => relative(root, absolute) || '.';

/**
 * Resolves a path the model gave (relative to the workspace, or absolute) and refuses, with a ToolError,
 * any path that leads outside the workspace once `..` and the symlinks of its existing parts are resolved.
 * A symlink that cannot be resolved (dangling, or a loop) is refused too: where it leads is unknown.
 */
export async function resolveInWorkspace(context: ToolContext, path: string, root?: string): Promise<WorkspacePath> {
  root ??= await workspaceRoot(context);
  if (path.includes('\0')) throw new ToolError('A path must not contain NUL characters');
  // An absolute path through a symlink to the workspace (the folder as the caller named it) resolves below.
  const target = isAbsolute(path) ? resolve(path) : resolve(root, path);

  const missing: string[] = [];
  let existing = target;
  let real: string;
  for (;;) {
    try {
      real = await realpath(existing);
      break;
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ELOOP') throw new ToolError(`${path}: too many levels of symbolic links`);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      if (await isSymlink(existing)) throw new ToolError(`${path}: the symbolic link ${displayPath(root, existing)} leads nowhere (it cannot be resolved)`);
      const parent = dirname(existing);
      if (parent === existing) throw new ToolError(`${path}: cannot be resolved`);
      missing.unshift(basename(existing));
      existing = parent;
    }
  }
  const absolute = join(real, ...missing);
  if (!isInside(root, absolute)) throw new ToolError(`${path} is outside the workspace (${root}); only paths inside it can be used`);
  return { root, absolute, relative: displayPath(root, absolute) };
}

async function isSymlink(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Keeps the paths (absolute) whose real location (symlinks resolved) is inside the workspace. */
export async function keepInside(root: string, paths: string[]): Promise<string[]> {
  const kept: string[] = [];
  for (const path of paths) {
    const real = await realpath(path).catch(() => null);
    if (real !== null && isInside(root, real)) kept.push(path);
  }
  return kept;
}

const rulesByFilesystem = new WeakMap<object, Map<string, PathRules>>();

/** The organization's filesystem rules for this workspace, compiled once per policy. */
export function pathRules(context: ToolContext, root: string): PathRules {
  const filesystem = context.policy.sandbox?.filesystem;
  if (!filesystem) return new PathRules(undefined, root);
  let byRoot = rulesByFilesystem.get(filesystem);
  if (!byRoot) rulesByFilesystem.set(filesystem, (byRoot = new Map()));
  let rules = byRoot.get(root);
  if (!rules) byRoot.set(root, (rules = new PathRules(filesystem, root)));
  return rules;
}

/** resolveInWorkspace, refusing a path the organization's `denyRead` keeps from the agent. */
export async function resolveForReading(context: ToolContext, path: string, root?: string): Promise<WorkspacePath> {
  const resolved = await resolveInWorkspace(context, path, root);
  const denial = pathRules(context, resolved.root).readDenial(resolved.absolute);
  if (denial) throw new ToolError(`${path}: the organization's ${denial} keeps it from the agent; it was not read`);
  return resolved;
}

/** resolveInWorkspace, refusing a path the organization's `denyWrite` (or `denyRead`) keeps from the agent. */
export async function resolveForWriting(context: ToolContext, path: string, root?: string): Promise<WorkspacePath> {
  const resolved = await resolveInWorkspace(context, path, root);
  const denial = pathRules(context, resolved.root).writeDenial(resolved.absolute);
  if (denial) throw new ToolError(`${path}: the organization's ${denial} keeps it from the agent; it was not changed`);
  return resolved;
}

/** The paths (absolute, real or not) the agent may read, and how many it may not: a listing says when it left some out. */
export async function keepReadable(context: ToolContext, root: string, paths: string[]): Promise<{ kept: string[]; hidden: number }> {
  const rules = pathRules(context, root);
  if (rules.empty) return { kept: paths, hidden: 0 };
  const kept: string[] = [];
  for (const path of paths) {
    const real = await realpath(path).catch(() => path);
    if (rules.readDenial(real) === null) kept.push(path);
  }
  return { kept, hidden: paths.length - kept.length };
}

/** What a listing says of the entries it left out for the organization's denyRead. */
export const hiddenNote = (hidden: number): string =>
  hidden === 0 ? '' : `\n[${hidden} ${hidden === 1 ? 'entry' : 'entries'} left out: the organization's sandbox.filesystem.denyRead keeps them from the agent]`;
