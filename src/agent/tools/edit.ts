import { readFile, stat, writeFile } from 'node:fs/promises';
import { defineTool, errorCode, looksBinary, optionalBoolean, plural, requiredString, ToolError } from './common';
import { resolveForWriting } from './workspace';

export const editTool = defineTool({
  name: 'Edit',
  description: [
    'Changes an existing file of the workspace by replacing old_str, an exact piece of its text (whitespace and indentation included, without the line numbers Read shows), with new_str.',
    'old_str must occur exactly once: include enough surrounding lines to make it unique, or set replace_all to replace every occurrence.',
    'To create a file use Create; to change several places or files at once, ApplyPatch.',
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'The file, relative to the workspace root or absolute (inside the workspace).' },
      old_str: { type: 'string', description: 'The exact text to replace (not empty).' },
      new_str: { type: 'string', description: 'The text to put in its place (may be empty, to delete old_str).' },
      replace_all: { type: 'boolean', description: 'Replace every occurrence of old_str instead of exactly one. Defaults to false.' },
    },
    required: ['file_path', 'old_str', 'new_str'],
    additionalProperties: false,
  },
  async run(input, context) {
    const filePath = requiredString(input, 'file_path', { nonEmpty: true });
    let oldStr = requiredString(input, 'old_str', { nonEmpty: true });
    let newStr = requiredString(input, 'new_str');
    const replaceAll = optionalBoolean(input, 'replace_all') ?? false;
    if (oldStr === newStr) throw new ToolError('old_str and new_str are the same: there is nothing to change');
    const path = await resolveForWriting(context, filePath);

    const stats = await stat(path.absolute).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR')
        throw new ToolError(`${path.relative} does not exist; use Create to make a new file`);
      throw error;
    });
    if (stats.isDirectory()) throw new ToolError(`${path.relative} is a folder, not a file`);
    if (!stats.isFile()) throw new ToolError(`${path.relative} is not a regular file`);
    const bytes = await readFile(path.absolute);
    if (looksBinary(bytes)) throw new ToolError(`${path.relative} is a binary file; Edit only changes text files`);
    const text = bytes.toString('utf8');

    let count = occurrences(text, oldStr);
    // A file with CRLF line ends, and strings written with LF: match them as the file writes them.
    if (count === 0 && text.includes('\r\n') && oldStr.includes('\n') && !oldStr.includes('\r')) {
      const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');
      const found = occurrences(text, crlf(oldStr));
      if (found > 0) [count, oldStr, newStr] = [found, crlf(oldStr), crlf(newStr)];
    }
    if (count === 0)
      throw new ToolError(
        `old_str was not found in ${path.relative}; it must match the file exactly, whitespace and indentation included (Read the file again to check)`,
      );
    if (count > 1 && !replaceAll)
      throw new ToolError(
        `old_str occurs ${count} times in ${path.relative}; add surrounding lines to make it unique, or set replace_all to replace every occurrence`,
      );

    const changed = replaceAll ? text.split(oldStr).join(newStr) : text.replace(oldStr, () => newStr);
    await writeFile(path.absolute, changed);
    return `Edited ${path.relative}: replaced ${plural(count, 'occurrence')} of old_str`;
  },
});

/** How many times `part` (not empty) occurs in `text`, without overlaps. */
export function occurrences(text: string, part: string): number {
  let count = 0;
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + part.length)) count += 1;
  return count;
}
