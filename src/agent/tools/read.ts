import { createReadStream } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { BINARY_SNIFF_BYTES, defineTool, errorCode, looksBinary, optionalNumber, requiredString, ToolError } from './common';
import { resolveForReading } from './workspace';
import { pdfText } from '../documents';

export const READ_DEFAULT_LIMIT = 2000;
export const READ_MAX_CHARACTERS = 100_000;
/** The largest PDF Read reads the text of. */
export const READ_MAX_PDF_BYTES = 32 * 1024 * 1024;
/** The largest image Read passes to the model (Anthropic's limit per image). */
export const READ_MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** One line of the output: its number right-aligned in six columns, a tab, the line (as `cat -n`). */
export const numberedLine = (number: number, line: string): string => `${String(number).padStart(6)}\t${line}`;

export const readTool = defineTool({
  name: 'Read',
  description: [
    'Reads a text file of the workspace and returns its lines, each prefixed with its line number and a tab (like `cat -n`).',
    `By default it returns the first ${READ_DEFAULT_LIMIT} lines; use offset (the first line to return, 1-based) and limit (how many lines) to read a part of a long file.`,
    `At most ${READ_MAX_CHARACTERS} characters are returned. An image (PNG, JPEG, GIF, WebP, at most 5 MB) is shown to you as an image, a PDF as its text. Folders (use LS) and other binary files are refused.`,
    'The line-number prefixes are not part of the file: leave them out of Edit and ApplyPatch.',
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'The file, relative to the workspace root or absolute (inside the workspace).' },
      offset: { type: 'integer', minimum: 1, description: 'The first line to return, 1-based. Defaults to 1.' },
      limit: { type: 'integer', minimum: 1, description: `How many lines to return. Defaults to ${READ_DEFAULT_LIMIT}.` },
    },
    required: ['file_path'],
    additionalProperties: false,
  },
  async run(input, context) {
    const filePath = requiredString(input, 'file_path', { nonEmpty: true });
    // 0 is read as "from the start": models often count from 0.
    const offset = Math.max(1, optionalNumber(input, 'offset', { integer: true, min: 0 }) ?? 1);
    const limit = optionalNumber(input, 'limit', { integer: true, min: 1 }) ?? READ_DEFAULT_LIMIT;
    const path = await resolveForReading(context, filePath);

    const stats = await stat(path.absolute).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') throw new ToolError(`${path.relative} does not exist`);
      throw error;
    });
    if (stats.isDirectory()) throw new ToolError(`${path.relative} is a folder, not a file; use LS to list it`);
    if (!stats.isFile()) throw new ToolError(`${path.relative} is not a regular file`);
    const image = await imageType(path.absolute);
    if (image) {
      if (stats.size > READ_MAX_IMAGE_BYTES)
        throw new ToolError(
          `${path.relative} is an image of ${Math.round(stats.size / 1024)} KB; images larger than ${READ_MAX_IMAGE_BYTES / 1024 / 1024} MB are not read`,
        );
      const data = (await readFile(path.absolute)).toString('base64');
      return {
        content: `${path.relative}: an image (${image}, ${Math.round(stats.size / 1024)} KB), shown to you beside this result.`,
        isError: false,
        images: [{ mediaType: image, data }],
      };
    }
    if (await isPdf(path.absolute)) {
      if (stats.size > READ_MAX_PDF_BYTES)
        throw new ToolError(
          `${path.relative} is a PDF of ${Math.round(stats.size / 1024 / 1024)} MB; PDFs larger than ${READ_MAX_PDF_BYTES / 1024 / 1024} MB are not read`,
        );
      const { pages, text } = await pdfText(new Uint8Array(await readFile(path.absolute)), READ_MAX_CHARACTERS).catch((error: Error) => {
        throw new ToolError(`${path.relative}: ${error.message}`);
      });
      return `${path.relative}: a PDF of ${pages} ${pages === 1 ? 'page' : 'pages'}, as text:\n${text || '(no text in it: it may hold only images)'}`;
    }
    if (await isBinaryFile(path.absolute))
      throw new ToolError(`${path.relative} is a binary file; Read only shows text files, images (PNG, JPEG, GIF, WebP) and PDFs`);

    const { lines, total, truncated } = await readLines(path.absolute, offset, limit, READ_MAX_CHARACTERS);
    if (total === 0) return `(${path.relative} is empty)`;
    if (lines.length === 0) throw new ToolError(`offset ${offset} is past the end of ${path.relative}, which has ${total} lines`);

    const last = offset + lines.length - 1;
    let content = lines.map((line, index) => numberedLine(offset + index, line)).join('\n');
    if (truncated) {
      content = content.slice(0, READ_MAX_CHARACTERS);
      const cut = offset + content.split('\n').length - 1;
      content += `\n[output truncated at ${READ_MAX_CHARACTERS} characters, in line ${cut}; use offset=${cut} to read on]`;
    } else if (total > last) {
      content += `\n[lines ${offset}-${last} shown; the file goes on: use offset=${last + 1} to read more]`;
    }
    return content;
  },
});

/** The image types the model APIs take, by the file's first bytes (never its name): its media type, or null. */
export async function imageType(path: string): Promise<string | null> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(12);
    const { bytesRead } = await handle.read(head, 0, 12, 0);
    const bytes = head.subarray(0, bytesRead);
    if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
    if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
    if (bytes.subarray(0, 6).toString('latin1') === 'GIF87a' || bytes.subarray(0, 6).toString('latin1') === 'GIF89a') return 'image/gif';
    if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
    return null;
  } finally {
    await handle.close();
  }
}

async function isPdf(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(5);
    const { bytesRead } = await handle.read(head, 0, 5, 0);
    return head.subarray(0, bytesRead).toString('latin1') === '%PDF-';
  } finally {
    await handle.close();
  }
}

/** True when the first 8 KB of the file hold a NUL byte. */
export async function isBinaryFile(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(BINARY_SNIFF_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, BINARY_SNIFF_BYTES, 0);
    return looksBinary(buffer.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

interface Lines {
  /** Lines `offset` to `offset + limit - 1` (without their line ends); the last may be cut at `maxCharacters`. */
  lines: string[];
  /** How many lines the file has, as far as it was read: more than the last line returned when the file goes on. */
  total: number;
  /** True when the lines hold more than `maxCharacters` characters (numbered): reading stopped there. */
  truncated: boolean;
}

/**
 * Streams the file and keeps only the requested lines, so a large file costs no more memory than the
 * output. Lines end at `\n`; a `\r` before it is dropped.
 */
async function readLines(path: string, offset: number, limit: number, maxCharacters: number): Promise<Lines> {
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: 64 * 1024 });
  const lines: string[] = [];
  let total = 0;
  let characters = 0;
  let pending = '';
  let truncated = false;
  let done = false;

  /** Takes one complete line (or, at the cap, the start of one); returns false when reading can stop. */
  const take = (line: string): boolean => {
    total += 1;
    if (total < offset) return true;
    if (lines.length === limit) return false; // this line proves the file goes on
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    lines.push(text);
    characters += text.length + 8; // the number, the tab and the line end
    if (characters > maxCharacters) {
      truncated = true;
      return false;
    }
    return true;
  };

  try {
    for await (const chunk of stream as AsyncIterable<string>) {
      pending += chunk;
      let start = 0;
      for (let end = pending.indexOf('\n'); end !== -1; end = pending.indexOf('\n', start)) {
        if (!take(pending.slice(start, end))) {
          done = true;
          break;
        }
        start = end + 1;
      }
      if (done) break;
      pending = pending.slice(start);
      // A line longer than the cap within the requested range: its start is all the output can show.
      if (total + 1 >= offset && lines.length < limit && characters + pending.length > maxCharacters) {
        take(pending);
        truncated = true;
        done = true;
        break;
      }
      // A very long line before the offset: only its end matters, not its text.
      if (total + 1 < offset && pending.length > maxCharacters) pending = pending.slice(-1);
    }
    if (!done && pending !== '') take(pending);
  } finally {
    stream.destroy();
  }
  return { lines, total, truncated };
}
