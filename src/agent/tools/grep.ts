import { readFile, stat } from 'node:fs/promises';
import { relative } from 'node:path';
import { Worker } from 'node:worker_threads';
import { defineTool, errorCode, looksBinary, optionalBoolean, optionalString, requiredString, ToolError } from './common';
import { findFiles } from './glob';
import { hiddenNote, resolveForReading } from './workspace';

export const GREP_MAX_MATCHES = 500;
export const GREP_MAX_FILE_BYTES = 1024 * 1024;
/** A matching line longer than this is cut: a minified file's one line should not fill the output. */
export const GREP_MAX_LINE_CHARACTERS = 500;
/** A search taking longer than this is stopped: the model's pattern backtracks catastrophically, most likely. */
export const GREP_TIMEOUT_MS = 30_000;

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
      pattern: {
        type: 'string',
        description: 'A JavaScript regular expression (no slashes around it), matched against each line, e.g. `function\\s+\\w+Tool`.',
      },
      path: {
        type: 'string',
        description: 'The folder (searched recursively) or file to search, relative to the workspace root or absolute. Defaults to the workspace root.',
      },
      glob: {
        type: 'string',
        description:
          'Only search files matching this glob, e.g. `*.ts` (a pattern without `/` matches the file name in any folder) or `src/**/*.ts` (relative to path).',
      },
      ignore_case: { type: 'boolean', description: 'Match case-insensitively. Defaults to false.' },
    },
    required: ['pattern'],
    additionalProperties: false,
  },
  async run(input, context) {
    const pattern = requiredString(input, 'pattern', { nonEmpty: true });
    const only = optionalString(input, 'glob');
    const ignoreCase = optionalBoolean(input, 'ignore_case') ?? false;
    try {
      new RegExp(pattern, ignoreCase ? 'i' : ''); // only to report a bad pattern here; it runs in the worker
    } catch (error) {
      throw new ToolError(`Invalid regular expression ${JSON.stringify(pattern)}: ${(error as Error).message}`);
    }

    const base = await resolveForReading(context, optionalString(input, 'path') || '.');
    const stats = await stat(base.absolute).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') throw new ToolError(`${base.relative} does not exist`);
      throw error;
    });
    let files: string[];
    let hidden = 0;
    if (stats.isDirectory()) {
      if (only !== undefined && /(^|[\\/])\.\.([\\/]|$)/.test(only)) throw new ToolError(`The glob ${JSON.stringify(only)} must not contain ".."`);
      const filter = !only ? '**/*' : only.includes('/') ? only.replace(/^\.?\/+/, '') : `**/${only}`;
      ({ files, hidden } = await findFiles(filter, base, context));
    } else if (stats.isFile()) {
      files = [base.absolute];
    } else {
      throw new ToolError(`${base.relative} is neither a file nor a folder`);
    }

    const matches: string[] = [];
    let more = false;
    const matcher = new LineMatcher(pattern, ignoreCase ? 'i' : '', context.signal);
    try {
      search: for (const file of files) {
        if (context.signal.aborted) throw new ToolError('The search was aborted');
        const text = await readText(file);
        if (text === null && file === base.absolute) throw new ToolError(`${base.relative} is a binary file or larger than 1 MB; Grep skips those`);
        if (text === null) continue;
        const name = relative(base.root, file);
        const lines = text.split('\n');
        for (const index of await matcher.match(text, GREP_MAX_MATCHES - matches.length + 1)) {
          if (matches.length === GREP_MAX_MATCHES) {
            more = true;
            break search;
          }
          const line = lines[index].endsWith('\r') ? lines[index].slice(0, -1) : lines[index];
          const shown =
            line.length > GREP_MAX_LINE_CHARACTERS ? `${line.slice(0, GREP_MAX_LINE_CHARACTERS)}… [line cut at ${GREP_MAX_LINE_CHARACTERS} characters]` : line;
          matches.push(`${name}:${index + 1}:${shown}`);
        }
      }
    } finally {
      matcher.close();
    }
    if (matches.length === 0)
      return `No matches for ${JSON.stringify(pattern)}${base.relative === '.' ? '' : ` in ${base.relative}`}${only ? ` (files matching ${JSON.stringify(only)})` : ''}${hiddenNote(hidden)}`;
    return (
      (more ? `${matches.join('\n')}\n[stopped after ${GREP_MAX_MATCHES} matches; narrow the pattern, path or glob]` : matches.join('\n')) + hiddenNote(hidden)
    );
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

/** The worker's code: plain JavaScript, so it runs the same from the build and under the test runner. */
const MATCHER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const regex = new RegExp(workerData.pattern, workerData.flags);
parentPort.on('message', ({ text, max }) => {
  const lines = text.split('\\n');
  const found = [];
  for (let i = 0; i < lines.length && found.length < max; i++) {
    const line = lines[i].endsWith('\\r') ? lines[i].slice(0, -1) : lines[i];
    if (regex.test(line)) found.push(i);
  }
  parentPort.postMessage(found);
});`;

/**
 * Matches the model's regular expression in a worker thread, so that a pattern that backtracks
 * catastrophically costs the search a timeout (the worker is killed), not the agent its event loop.
 */
class LineMatcher {
  private readonly worker: Worker;
  private readonly deadline = Date.now() + GREP_TIMEOUT_MS;

  constructor(
    pattern: string,
    flags: string,
    private readonly signal: AbortSignal,
  ) {
    this.worker = new Worker(MATCHER_SOURCE, { eval: true, workerData: { pattern, flags } });
  }

  /** The indexes of the first `max` lines of `text` that match. */
  match(text: string, max: number): Promise<number[]> {
    return new Promise((resolve, reject) => {
      const done = (error: Error | null, found?: number[]) => {
        clearTimeout(timer);
        this.signal.removeEventListener('abort', onAbort);
        this.worker.off('message', onMessage).off('error', onError);
        if (error) reject(error);
        else resolve(found!);
      };
      const onMessage = (found: number[]) => done(null, found);
      const onError = (error: Error) => done(new ToolError(`The search failed: ${error.message}`));
      const onAbort = () => done(new ToolError('The search was aborted'));
      const timer = setTimeout(
        () =>
          done(
            new ToolError(
              `The search was stopped after ${GREP_TIMEOUT_MS / 1000} s: the pattern most likely backtracks catastrophically (nested quantifiers such as (a+)+); simplify it`,
            ),
          ),
        Math.max(0, this.deadline - Date.now()),
      );
      this.signal.addEventListener('abort', onAbort, { once: true });
      this.worker.on('message', onMessage).on('error', onError);
      this.worker.postMessage({ text, max });
    });
  }

  close(): void {
    void this.worker.terminate();
  }
}
