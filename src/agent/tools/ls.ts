import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { defineTool, errorCode, optionalString, ToolError } from './common';
import { hiddenNote, keepReadable, resolveForReading } from './workspace';

export const LS_MAX_ENTRIES = 1000;

export const lsTool = defineTool({
  name: 'LS',
  description: [
    'Lists the entries of a folder of the workspace, one per line, sorted; folders end with `/`.',
    'Without path it lists the workspace root. It does not recurse: use Glob to find files by name.',
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'The folder, relative to the workspace root or absolute (inside the workspace). Defaults to the workspace root.' },
    },
    additionalProperties: false,
  },
  async run(input, context) {
    const path = await resolveForReading(context, optionalString(input, 'path') || '.');
    const stats = await stat(path.absolute).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') throw new ToolError(`${path.relative} does not exist`);
      throw error;
    });
    if (!stats.isDirectory()) throw new ToolError(`${path.relative} is not a folder; use Read to read a file`);

    const listed = await readdir(path.absolute, { withFileTypes: true });
    const { kept, hidden } = await keepReadable(
      context,
      path.root,
      listed.map((entry) => join(path.absolute, entry.name)),
    );
    const readable = new Set(kept);
    const entries = listed.filter((entry) => readable.has(join(path.absolute, entry.name)));
    const names = await Promise.all(
      entries.map(async (entry) => {
        // A symlink to a folder lists as a folder.
        const folder =
          entry.isDirectory() ||
          (entry.isSymbolicLink() &&
            (await stat(join(path.absolute, entry.name)).then(
              (s) => s.isDirectory(),
              () => false,
            )));
        return folder ? `${entry.name}/` : entry.name;
      }),
    );
    names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (names.length === 0) return `(${path.relative} is empty)${hiddenNote(hidden)}`;
    const shown = names.slice(0, LS_MAX_ENTRIES).join('\n');
    return (
      (names.length > LS_MAX_ENTRIES ? `${shown}\n[${LS_MAX_ENTRIES} of ${names.length} entries shown; use Glob to narrow down]` : shown) + hiddenNote(hidden)
    );
  },
});
