import { stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { glob } from 'tinyglobby';
import { defineTool, errorCode, optionalString, requiredString, ToolError } from './common';
import { ToolContext } from './tool';
import { hiddenNote, isInside, keepInside, keepReadable, resolveForReading, WorkspacePath } from './workspace';

export const GLOB_MAX_FILES = 1000;
/** Folders no search looks into (unless the search starts inside one). */
export const IGNORED_FOLDERS = ['.git', 'node_modules'];

/**
 * The files (absolute paths, sorted) under the folder `base` that match the glob `pattern` (relative to
 * `base`), leaving out `.git/` and `node_modules/`, anything whose real path is outside the workspace, and
 * (counted in `hidden`) what the organization's denyRead keeps from the agent. Symlinked folders are not followed.
 */
export async function findFiles(pattern: string, base: WorkspacePath, context: ToolContext): Promise<{ files: string[]; hidden: number }> {
  const found = await glob(pattern, {
    cwd: base.absolute,
    dot: true,
    onlyFiles: true,
    expandDirectories: false,
    followSymbolicLinks: false,
    ignore: IGNORED_FOLDERS.map((folder) => `**/${folder}/**`),
    signal: context.signal,
  });
  // An aborted crawl ends early without an error: its files are not all the files.
  if (context.signal.aborted) throw new ToolError('The search was aborted');
  const inside = await keepInside(
    base.root,
    found.map((file) => join(base.absolute, file)),
  );
  const { kept, hidden } = await keepReadable(context, base.root, inside);
  return { files: kept.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), hidden };
}

/** The folder to search: `path` (default the workspace root), which must be a folder. */
export async function searchFolder(context: ToolContext, path: string | undefined): Promise<WorkspacePath> {
  const folder = await resolveForReading(context, path || '.');
  const stats = await stat(folder.absolute).catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') throw new ToolError(`${folder.relative} does not exist`);
    throw error;
  });
  if (!stats.isDirectory()) throw new ToolError(`${folder.relative} is not a folder`);
  return folder;
}

/** A glob pattern relative to `base`: `..` is refused; an absolute pattern must lie inside `base`. */
function relativePattern(pattern: string, base: WorkspacePath, workspace: string): string {
  if (/(^|[\\/])\.\.([\\/]|$)/.test(pattern))
    throw new ToolError(
      `The pattern ${JSON.stringify(pattern)} must not contain ".." (it may only match inside the workspace); use path to search another folder`,
    );
  if (!isAbsolute(pattern)) return pattern;
  // The workspace may be named through a symlink: accept both its real and its given absolute path.
  for (const prefix of [base.absolute, resolve(workspace, relative(base.root, base.absolute))]) {
    if (isInside(prefix, pattern) && pattern.length > prefix.length) return pattern.slice(prefix.length).replace(/^\/+/, '');
  }
  throw new ToolError(
    `The pattern ${JSON.stringify(pattern)} is absolute and outside the folder searched (${base.absolute}); give a pattern relative to the workspace`,
  );
}

export const globTool = defineTool({
  name: 'Glob',
  description: [
    'Finds files of the workspace by name with a glob pattern (`*` within a folder name, `**` across folders, `{a,b}` alternatives), e.g. `**/*.ts` or `src/**/*.spec.ts`.',
    'Returns the matching files (not folders), relative to the workspace root, sorted.',
    `Skips .git/ and node_modules/ (unless path points into one); returns at most ${GLOB_MAX_FILES} files.`,
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      pattern: { type: 'string', description: 'The glob pattern, relative to path.' },
      path: {
        type: 'string',
        description: 'The folder to search, relative to the workspace root or absolute (inside the workspace). Defaults to the workspace root.',
      },
    },
    required: ['pattern'],
    additionalProperties: false,
  },
  async run(input, context) {
    const pattern = requiredString(input, 'pattern', { nonEmpty: true });
    const base = await searchFolder(context, optionalString(input, 'path'));
    const { files, hidden } = await findFiles(relativePattern(pattern, base, context.workspace), base, context);
    if (files.length === 0) return `No files match ${JSON.stringify(pattern)}${base.relative === '.' ? '' : ` in ${base.relative}`}${hiddenNote(hidden)}`;
    const shown = files
      .slice(0, GLOB_MAX_FILES)
      .map((file) => relative(base.root, file))
      .join('\n');
    return (
      (files.length > GLOB_MAX_FILES ? `${shown}\n[${GLOB_MAX_FILES} of ${files.length} files shown; use a narrower pattern or path]` : shown) +
      hiddenNote(hidden)
    );
  },
});
