import { mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { defineTool, errorCode, errorMessage, looksBinary, requiredString, ToolError } from './common';
import { exists } from './create';
import { ToolContext } from './tool';
import { resolveForWriting, workspaceRoot, WorkspacePath } from './workspace';

/** A line of a hunk: context (` `), removed (`-`) or added (`+`). */
export type HunkLine = [op: ' ' | '-' | '+', text: string];

/** One change of a file: its context and removed lines are found in the file and replaced by its context and added lines. */
export interface Hunk {
  /** The text after `@@ `: a line to find first; the hunk applies after it. */
  anchor?: string;
  lines: HunkLine[];
  /** `*** End of File` closed the hunk: its lines end the file. */
  endOfFile: boolean;
  /** The hunk's first line in the patch (1-based), for messages. */
  line: number;
}

export type FileOperation =
  { kind: 'add'; path: string; lines: string[] } | { kind: 'delete'; path: string } | { kind: 'update'; path: string; moveTo?: string; hunks: Hunk[] };

const BEGIN = '*** Begin Patch';
const END = '*** End Patch';
const ADD = '*** Add File: ';
const DELETE = '*** Delete File: ';
const UPDATE = '*** Update File: ';
const MOVE = '*** Move to: ';
const END_OF_FILE = '*** End of File';

const isFileHeader = (line: string) => line.startsWith(ADD) || line.startsWith(DELETE) || line.startsWith(UPDATE) || line.trim() === END;

/** Parses a patch in the `*** Begin Patch` format; a ToolError names the first line it cannot read. */
export function parsePatch(patch: string): FileOperation[] {
  let lines = patch.replace(/\r\n/g, '\n').split('\n');
  while (lines.length > 0 && lines[0].trim() === '') lines.shift();
  while (lines.length > 0 && lines[lines.length - 1].trim() === '') lines.pop();
  // A patch written as a shell heredoc (`apply_patch <<'EOF'` ... `EOF`): the patch is inside.
  const heredoc = /^(?:\S+\s+)?<<-?\s*(['"]?)(\w+)\1\s*$/.exec(lines[0] ?? '');
  let first = 1;
  if (heredoc && lines.length > 1 && lines[lines.length - 1].trim() === heredoc[2]) {
    lines = lines.slice(1, -1);
    first = 2;
  }
  if (lines[0]?.trim() !== BEGIN) throw new ToolError(`The patch must start with "${BEGIN}"`);
  if (lines[lines.length - 1]?.trim() !== END || lines.length < 2) throw new ToolError(`The patch must end with "${END}"`);

  const operations: FileOperation[] = [];
  const fail = (index: number, message: string): never => {
    throw new ToolError(`Patch line ${index + first}: ${message}`);
  };
  let i = 1;
  const last = lines.length - 1;
  const filePath = (index: number, prefix: string) => lines[index].slice(prefix.length).trim() || fail(index, `"${prefix.trim()}" names no file`);

  while (i < last) {
    const line = lines[i];
    if (line.trim() === '') {
      i += 1;
    } else if (line.startsWith(ADD)) {
      const path = filePath(i, ADD);
      const content: string[] = [];
      for (i += 1; i < last && !isFileHeader(lines[i]); i += 1) {
        if (!lines[i].startsWith('+')) fail(i, `every line of an added file starts with "+": ${JSON.stringify(lines[i])}`);
        content.push(lines[i].slice(1));
      }
      operations.push({ kind: 'add', path, lines: content });
    } else if (line.startsWith(DELETE)) {
      const path = filePath(i, DELETE);
      for (i += 1; i < last && !isFileHeader(lines[i]); i += 1)
        if (lines[i].trim() !== '') fail(i, `a deleted file takes no lines: ${JSON.stringify(lines[i])}`);
      operations.push({ kind: 'delete', path });
    } else if (line.startsWith(UPDATE)) {
      const path = filePath(i, UPDATE);
      i += 1;
      let moveTo: string | undefined;
      if (i < last && lines[i].startsWith(MOVE)) {
        moveTo = filePath(i, MOVE);
        i += 1;
      }
      const hunks: Hunk[] = [];
      let hunk: Hunk | undefined;
      for (; i < last && !isFileHeader(lines[i]); i += 1) {
        const text = lines[i];
        if (text.startsWith('@@')) {
          hunk = { anchor: anchorOf(text), lines: [], endOfFile: false, line: i + first };
          hunks.push(hunk);
        } else if (text.trim() === END_OF_FILE) {
          if (!hunk) fail(i, `"${END_OF_FILE}" outside a hunk`);
          else hunk.endOfFile = true;
        } else if (text === '' || text[0] === ' ' || text[0] === '-' || text[0] === '+') {
          // The first hunk may leave out its `@@` line.
          if (!hunk) hunks.push((hunk = { lines: [], endOfFile: false, line: i + first }));
          else if (hunk.endOfFile) fail(i, `a line after "${END_OF_FILE}"; start another hunk with "@@"`);
          hunk.lines.push([text === '' ? ' ' : (text[0] as HunkLine[0]), text.slice(1)]);
        } else {
          fail(i, `a hunk line starts with " " (context), "-" (removed) or "+" (added): ${JSON.stringify(text)}`);
        }
      }
      const empty = hunks.find((h) => h.lines.length === 0);
      if (empty) throw new ToolError(`Patch line ${empty.line}: the hunk has no lines`);
      if (hunks.length === 0 && moveTo === undefined) throw new ToolError(`Patch: "${UPDATE}${path}" has no hunks`);
      operations.push({ kind: 'update', path, moveTo, hunks });
    } else {
      fail(i, `expected "${ADD.trim()}", "${DELETE.trim()}", "${UPDATE.trim()}" or "${END}", not ${JSON.stringify(line)}`);
    }
  }
  if (operations.length === 0) throw new ToolError('The patch changes no file');
  return operations;
}

/** The anchor of a hunk's `@@` line: `@@ def f():` anchors at `def f():`; a unified diff's `@@ -1,2 +1,3 @@ x` at `x`. */
function anchorOf(header: string): string | undefined {
  const unified = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$/.exec(header);
  const anchor = unified ? unified[1] : header.slice(2).replace(/^ /, '');
  return anchor.trim() === '' ? undefined : anchor;
}

/** Line comparisons, strictest first: a hunk matches the exact lines if it can, else ignoring trailing, then all outer whitespace. */
const LEVELS: Array<(line: string) => string> = [(s) => s, (s) => s.trimEnd(), (s) => s.trim()];

/** The first index at or after `from` where `pattern` occurs in `lines`, at the strictest level that finds one. */
function seek(lines: string[], pattern: string[], from: number, endOfFile: boolean): number | undefined {
  for (const normal of LEVELS) {
    const matchesAt = (start: number) => pattern.every((p, k) => normal(lines[start + k]) === normal(p));
    const end = lines.length - pattern.length;
    if (endOfFile && end >= from && matchesAt(end)) return end;
    for (let start = from; start <= end; start++) if (matchesAt(start)) return start;
  }
  return undefined;
}

/** The file's text with the hunks applied in order; a ToolError names the hunk that does not apply. */
export function applyHunks(text: string, hunks: Hunk[], name: string): string {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  const endsWithNewline = text === '' || text.endsWith('\n');
  if (endsWithNewline) lines.pop();

  const replacements: Array<{ start: number; remove: number; insert: string[] }> = [];
  let cursor = 0;
  for (const hunk of hunks) {
    if (hunk.anchor !== undefined) {
      const at = seek(lines, [hunk.anchor], cursor, false);
      if (at === undefined)
        throw new ToolError(
          `${name}: the hunk at patch line ${hunk.line} did not apply: its "@@" line ${JSON.stringify(hunk.anchor)} was not found${cursor > 0 ? ' after the previous hunk' : ''}`,
        );
      cursor = at + 1;
    }
    let body = hunk.lines;
    const oldLines = () => body.filter(([op]) => op !== '+').map(([, text]) => text);
    if (oldLines().length === 0) {
      // Only added lines: after the anchor when there is one, else at the end of the file.
      const at = hunk.anchor !== undefined ? cursor : lines.length;
      replacements.push({ start: at, remove: 0, insert: body.map(([, text]) => text) });
      cursor = at;
      continue;
    }
    let start = seek(lines, oldLines(), cursor, hunk.endOfFile);
    // A trailing empty context line (a blank line before the next header) that stands for nothing.
    const [op, text] = body[body.length - 1];
    if (start === undefined && op === ' ' && text === '') {
      body = body.slice(0, -1);
      if (oldLines().length > 0) start = seek(lines, oldLines(), cursor, hunk.endOfFile);
    }
    if (start === undefined) {
      const preview = hunk.lines
        .filter(([op]) => op !== '+')
        .slice(0, 3)
        .map(([, line]) => `  ${JSON.stringify(line)}`);
      throw new ToolError(
        `${name}: the hunk at patch line ${hunk.line} did not apply: its context and removed lines were not found${cursor > 0 ? ' after the previous hunk' : ''}, starting with\n${preview.join('\n')}`,
      );
    }
    // Context lines stay as the file has them (they may differ in whitespace); removed lines go; added lines come.
    const insert: string[] = [];
    let at = start;
    for (const [op, text] of body) {
      if (op === ' ') insert.push(lines[at]);
      if (op === '+') insert.push(text);
      else at += 1;
    }
    replacements.push({ start, remove: at - start, insert });
    cursor = at;
  }
  for (const { start, remove, insert } of replacements.reverse()) lines.splice(start, remove, ...insert);
  return lines.length === 0 ? '' : lines.join(eol) + (endsWithNewline ? eol : '');
}

/** A file operation checked and computed, ready to write. */
type Planned =
  | { kind: 'add'; path: WorkspacePath; content: string }
  | { kind: 'delete'; path: WorkspacePath; original: Buffer }
  | { kind: 'update'; path: WorkspacePath; moveTo?: WorkspacePath; content: string; original: Buffer };

export const applyPatchTool = defineTool({
  name: 'ApplyPatch',
  description: [
    'Adds, deletes, updates and moves files of the workspace with one patch, all or nothing: if any part does not apply, nothing is changed. The format:',
    '',
    '*** Begin Patch',
    '*** Add File: path/of/new.txt',
    '+every line of the new file, each starting with +',
    '*** Delete File: path/of/old.txt',
    '*** Update File: path/of/changed.py',
    '*** Move to: path/of/renamed.py   (optional)',
    '@@ def an_anchor_line():   (optional text after @@: a line to find first; the hunk applies after it)',
    ' a context line (starts with a space)',
    '-a removed line',
    '+an added line',
    '@@',
    ' the next hunk...',
    '*** End Patch',
    '',
    'Each hunk is found by its context and removed lines, in order (after the previous hunk), so give 3 lines of context around each change and copy them exactly (without the line numbers Read shows).',
    'Paths are relative to the workspace root.',
  ].join('\n'),
  parameters: {
    type: 'object',
    properties: {
      patch: { type: 'string', description: 'The whole patch, from "*** Begin Patch" to "*** End Patch".' },
    },
    required: ['patch'],
    additionalProperties: false,
  },
  async run(input, context) {
    const operations = parsePatch(requiredString(input, 'patch', { nonEmpty: true }));
    const plan = await planPatch(operations, context);
    await writePlan(plan);
    const report = plan.map((step) => {
      if (step.kind === 'add') return `added ${step.path.relative}`;
      if (step.kind === 'delete') return `deleted ${step.path.relative}`;
      return step.moveTo ? `updated ${step.path.relative}, moved to ${step.moveTo.relative}` : `updated ${step.path.relative}`;
    });
    return `Applied the patch:\n${report.join('\n')}`;
  },
});

/** Checks every operation and computes the new contents; a ToolError lists every problem found. */
async function planPatch(operations: FileOperation[], context: ToolContext): Promise<Planned[]> {
  const root = await workspaceRoot(context);
  const problems: string[] = [];
  const plan: Planned[] = [];
  const touched = new Map<string, string>();
  const claim = (path: WorkspacePath, given: string) => {
    const before = touched.get(path.absolute);
    if (before !== undefined)
      throw new ToolError(`${given}: the patch changes ${path.relative} more than once; put all changes of a file under one "${UPDATE.trim()}"`);
    touched.set(path.absolute, given);
  };

  for (const operation of operations) {
    try {
      const path = await resolveForWriting(context, operation.path, root);
      claim(path, operation.path);
      if (operation.kind === 'add') {
        if (await exists(path.absolute)) throw new ToolError(`${operation.path}: cannot add ${path.relative}, it already exists; use "${UPDATE.trim()}"`);
        plan.push({ kind: 'add', path, content: operation.lines.length === 0 ? '' : `${operation.lines.join('\n')}\n` });
        continue;
      }
      const original = await readExistingFile(path, operation.path);
      if (operation.kind === 'delete') {
        plan.push({ kind: 'delete', path, original });
        continue;
      }
      let moveTo: WorkspacePath | undefined;
      if (operation.moveTo !== undefined) {
        moveTo = await resolveForWriting(context, operation.moveTo, root);
        if (moveTo.absolute === path.absolute) moveTo = undefined;
        else {
          claim(moveTo, operation.moveTo);
          if (await exists(moveTo.absolute)) throw new ToolError(`${operation.path}: cannot move it to ${moveTo.relative}, which already exists`);
        }
      }
      if (looksBinary(original)) throw new ToolError(`${operation.path}: ${path.relative} is a binary file; ApplyPatch only changes text files`);
      const content = applyHunks(original.toString('utf8'), operation.hunks, operation.path);
      plan.push({ kind: 'update', path, moveTo, content, original });
    } catch (error) {
      problems.push(errorMessage(error));
    }
  }
  if (problems.length > 0) throw new ToolError(`The patch was not applied (no file was changed):\n${problems.map((problem) => `- ${problem}`).join('\n')}`);
  return plan;
}

async function readExistingFile(path: WorkspacePath, given: string): Promise<Buffer> {
  const stats = await stat(path.absolute).catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') throw new ToolError(`${given}: ${path.relative} does not exist`);
    throw error;
  });
  if (!stats.isFile()) throw new ToolError(`${given}: ${path.relative} is not a file`);
  return readFile(path.absolute);
}

/** Writes the plan; when a write fails, undoes the writes done so far and throws. */
async function writePlan(plan: Planned[]): Promise<void> {
  const undo: Array<() => Promise<void>> = [];
  try {
    for (const step of plan) {
      const file = step.path.absolute;
      if (step.kind === 'add') {
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, step.content, { flag: 'wx' });
        undo.push(() => unlink(file));
      } else if (step.kind === 'delete') {
        await unlink(file);
        undo.push(() => writeFile(file, step.original));
      } else if (step.moveTo) {
        const target = step.moveTo.absolute;
        await mkdir(dirname(target), { recursive: true });
        if (await exists(target)) throw new ToolError(`${step.moveTo.relative} appeared while the patch was applied`);
        await rename(file, target); // keeps the file's mode
        undo.push(() => rename(target, file));
        await writeFile(target, step.content);
        undo.push(() => writeFile(target, step.original));
      } else {
        await writeFile(file, step.content);
        undo.push(() => writeFile(file, step.original));
      }
    }
  } catch (error) {
    const failures: string[] = [];
    for (const step of undo.reverse()) await step().catch((undoError: unknown) => failures.push(errorMessage(undoError)));
    const undone = failures.length === 0 ? 'the files written before were restored' : `restoring the files written before failed too: ${failures.join('; ')}`;
    throw new ToolError(`Writing the patch failed (${errorMessage(error)}); ${undone}`);
  }
}
