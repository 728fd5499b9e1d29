import { readFile, stat } from 'node:fs/promises';
import { relative } from 'node:path';
import { defineTool, errorCode, looksBinary, optionalBoolean, optionalString, requiredString, ToolError } from './common';
import { findFiles } from './glob';
import { resolveInWorkspace } from './workspace';

export const GREP_MAX_MATCHES = 500;
export const GREP_MAX_FILE_BYTES = 1024 * 1024;
/** A matching line longer than this is cut: a minified file's one line should not fill the output. */
export const GREP_MAX_LINE_CHARACTERS = 500;

export const grepTool = defineTool({
  name: 'Grep',
  description: [
    'Searches the text files of the workspace for lines matching a JavaScript regular expression.',
    'Returns each matching line as `file:line:text` (file relative to the workspace root, line 1-based), files in sorted order.',
    `Skips .git/ and node_modules/ (unless path points into one), binary files and files over 1 MB; returns at most ${GREP_MAX_MATCHES} matches,`,
    `and cuts lines after ${GREP_MAX_LINE_CHARACTERS} characters.`,
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      pattern: { type: 'string', description: 'A JavaScript regular expression (no slashes around it), matched against each line, e.g. `function\\s+\\w+Tool`.' },
      path: { type: 'string', description: 'The folder (searched recursively) or file to search, relative to the workspace root or absolute. Defaults to the workspace root.' },
      glob: { type: 'string', description: 'Only search files matching this glob, e.g. `*.ts` (a pattern without `/` matches the file name in any folder) or `src/**/*.ts` (relative to path).' },
      ignore_case: { type: 'boolean', description: 'Match case-insensitively. Defaults to false.' },
    },
    required: ['pattern'],
    additionalProperties: false,
  },
  async run(input, context) {
    const pattern = requiredString(input, 'pattern', { nonEmpty: true });
    const only = optionalString(input, 'glob');
    const ignoreCase = optionalBoolean(input, 'ignore_case') ?? false;
    let regex: RegExp;
    try {
      regex = new RegExp(pattern, ignoreCase ? 'i' : '');
    } catch (error) {
      throw new ToolError(`Invalid regular expression ${JSON.stringify(pattern)}: ${(error as Error).message}`);
    }

    const base = await resolveInWorkspace(context, optionalString(input, 'path') || '.');
    const stats = await stat(base.absolute).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') throw new ToolError(`${base.relative} does not exist`);
      throw error;
    });
    let files: string[];
    if (stats.isDirectory()) {
      if (only !== undefined && /(^|[\\/])\.\.([\\/]|$)/.test(only)) throw new ToolError(`The glob ${JSON.stringify(only)} must not contain ".."`);
      const filter = !only ? '**/*' : only.includes('/') ? only.replace(/^\.?\/+/, '') : `**/${only}`;
      files = await findFiles(filter, base, context);
    } else if (stats.isFile()) {
      files = [base.absolute];
    } else {
      throw new ToolError(`${base.relative} is neither a file nor a folder`);
    }

    const matches: string[] = [];
    let more = false;
    search: for (const file of files) {
      if (context.signal.aborted) throw new ToolError('The search was aborted');
      const text = await readText(file);
      if (text === null && file === base.absolute) throw new ToolError(`${base.relative} is a binary file or larger than 1 MB; Grep skips those`);
      if (text === null) continue;
      const name = relative(base.root, file);
      const lines = text.split('\n');
      for (let index = 0; index < lines.length; index++) {
        let line = lines[index];
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (!regex.test(line)) continue;
        if (matches.length === GREP_MAX_MATCHES) {
          more = true;
          break search;
        }
        const shown = line.length > GREP_MAX_LINE_CHARACTERS ? `${line.slice(0, GREP_MAX_LINE_CHARACTERS)}… [line cut at ${GREP_MAX_LINE_CHARACTERS} characters]` : line;
        matches.push(`${name}:${index + 1}:${shown}`);
      }
    }
    if (matches.length === 0) return `No matches for ${JSON.stringify(pattern)}${base.relative === '.' ? '' : ` in ${base.relative}`}${only ? ` (files matching ${JSON.stringify(only)})` : ''}`;
    return more ? `${matches.join('\n')}\n[stopped after ${GREP_MAX_MATCHES} matches; narrow the pattern, path or glob]` : matches.join('\n');
  },
});

/** The file's text; null for files Grep skips (too large, binary, unreadable). */
async function readText(file: string): Promise<string | null> {
  try {
    const stats = await stat(file);
    if (!stats.isFile() || stats.size > GREP_MAX_FILE_BYTES) return null;
    const bytes = await readFile(file);
    if (looksBinary(bytes)) return null;
    return bytes.toString('utf8');
  } catch {
    return null;
  }
}
