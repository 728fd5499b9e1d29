import { lstat, mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { defineTool, errorCode, plural, requiredString, ToolError } from './common';
import { resolveForWriting } from './workspace';

export const createTool = defineTool({
  name: 'Create',
  description: [
    'Creates a new file in the workspace with the given content, and the folders it needs.',
    'It refuses to overwrite an existing file: change existing files with Edit or ApplyPatch.',
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'The new file, relative to the workspace root or absolute (inside the workspace).' },
      content: { type: 'string', description: 'The whole content of the file.' },
    },
    required: ['file_path', 'content'],
    additionalProperties: false,
  },
  async run(input, context) {
    const filePath = requiredString(input, 'file_path', { nonEmpty: true });
    const content = requiredString(input, 'content');
    const path = await resolveForWriting(context, filePath);
    if (await exists(path.absolute)) throw new ToolError(`${path.relative} already exists; use Edit (or ApplyPatch) to change it`);
    await mkdir(dirname(path.absolute), { recursive: true }).catch((error: unknown) => {
      if (errorCode(error) === 'EEXIST' || errorCode(error) === 'ENOTDIR')
        throw new ToolError(`Cannot create ${path.relative}: a part of its folder is a file`);
      throw error;
    });
    // `wx`: fails rather than overwrite a file created meanwhile.
    await writeFile(path.absolute, content, { flag: 'wx' }).catch((error: unknown) => {
      if (errorCode(error) === 'EEXIST') throw new ToolError(`${path.relative} already exists; use Edit (or ApplyPatch) to change it`);
      throw error;
    });
    return `Created ${path.relative} (${plural(lineCount(content), 'line')})`;
  },
});

/** True when something (a file, folder or symlink, even a dangling one) is at the path. */
export async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return false;
    throw error;
  }
}

/** How many lines the text has: a final line end does not start another line. */
export const lineCount = (text: string): number => (text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0));
