import { open, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { StringDecoder } from 'node:string_decoder';

/** The most of each instructions text the model gets (the rest is left out, and the prompt says so). */
export const MEMORY_MAX_BYTES = 32 * 1024;

/** Instructions read from a file: their text (at most MEMORY_MAX_BYTES of it), where from, and whether some was left out. */
export interface Instructions {
  text: string;
  source: string;
  truncated: boolean;
}

/**
 * What the agent remembers across turns, read again at every turn: the user's `instructions` (the
 * settings file, beside the hooks) and the project's AGENTS.md at the workspace root (those of its
 * folders come with the tool results that reach them: NestedInstructions).
 */
export interface Memory {
  user: Instructions | null;
  project: Instructions | null;
}

export const NO_MEMORY: Memory = { user: null, project: null };

/** Reads the memory of a turn; a missing or unreadable file is no instructions (never a failed turn). */
export async function loadMemory(workspace: string, settingsFile: string | undefined): Promise<Memory> {
  const agentsFile = join(workspace, 'AGENTS.md');
  const [project, settings] = await Promise.all([
    (await insideWorkspace(workspace, agentsFile)) ? readCapped(agentsFile) : null,
    settingsFile ? readCapped(settingsFile, Infinity) : null,
  ]);
  return { project: project && project.text.trim() ? project : null, user: settings ? userInstructions(settings.text, settingsFile!) : null };
}

/**
 * The `instructions` string of the settings file, capped. A file that is not JSON, or has no such
 * string, has none (the hooks loader reports a broken file in the session already).
 */
function userInstructions(json: string, source: string): Instructions | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json.replace(/^\uFEFF/, ''));
  } catch {
    return null;
  }
  const text = typeof parsed === 'object' && parsed !== null ? (parsed as { instructions?: unknown }).instructions : undefined;
  if (typeof text !== 'string' || text.trim() === '') return null;
  const capped = capBytes(text, MEMORY_MAX_BYTES);
  return { text: capped, source: `${source} ("instructions")`, truncated: capped.length < text.length };
}

/**
 * The agent's own rules, then the user's instructions, then the project's: later and more specific
 * text wins where they conflict, and none of it over the agent's rules or the organization's policy
 * (which the platform enforces whatever the prompt says).
 */
export function withMemory(prompt: string, memory: Memory): string {
  const parts = [prompt];
  if (!memory.user && !memory.project) return prompt;
  parts.push(
    'Below are instructions from the user and from the project. Follow them where they do not conflict with the rules above or with the ' +
      "organization's policy, which always win. Where the project's AGENTS.md and the user's instructions conflict, the project's AGENTS.md wins.",
  );
  if (memory.user) parts.push(section('user_instructions', "The user's instructions", memory.user));
  if (memory.project) parts.push(section('project_instructions', "The project's instructions (AGENTS.md at the workspace's root)", memory.project));
  return parts.join('\n\n');
}

function section(tag: string, title: string, instructions: Instructions): string {
  const note = instructions.truncated ? `\n\n[truncated: only the first ${MEMORY_MAX_BYTES / 1024} KiB of ${instructions.source} are shown]` : '';
  return `<${tag}>\n# ${title}\n\n${instructions.text.trimEnd()}${note}\n</${tag}>`;
}

/** At most `max` bytes of a file as text (a large file is not read whole); null when it cannot be read. */
async function readCapped(path: string, max = MEMORY_MAX_BYTES): Promise<Instructions | null> {
  let file;
  try {
    file = await open(path, 'r');
  } catch {
    return null;
  }
  try {
    const { size } = await file.stat();
    if (!Number.isFinite(max)) return { text: await file.readFile('utf8'), source: path, truncated: false };
    const buffer = Buffer.alloc(Math.min(size, max));
    const { bytesRead } = await file.read(buffer, 0, buffer.length, 0);
    return { text: new StringDecoder('utf8').write(buffer.subarray(0, bytesRead)), source: path, truncated: size > max };
  } catch {
    return null;
  } finally {
    await file.close();
  }
}

/** The longest start of `text` that is at most `max` bytes of UTF-8, not cutting a character. */
export function capBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  // A StringDecoder keeps the bytes of a character cut in two back instead of decoding them.
  return new StringDecoder('utf8').write(bytes.subarray(0, max));
}

/** The most of all nested AGENTS.md files one turn adds to the conversation. */
export const NESTED_MEMORY_MAX_BYTES = 32 * 1024;

/**
 * The AGENTS.md files of the folders the agent works in, below the workspace's root (whose own file is in the
 * system prompt already): when a tool touches a path, the files of its folder and of the folders between it and
 * the root that this turn has not seen yet are read, the nearest last, within NESTED_MEMORY_MAX_BYTES a turn.
 */
export class NestedInstructions {
  private readonly seen = new Set<string>();
  private used = 0;

  constructor(private readonly workspace: string) {}

  /** The instructions for `path` (a file or folder of the workspace, relative or absolute), or null when there are none new. */
  async for(path: string): Promise<string | null> {
    const root = resolve(this.workspace);
    const target = resolve(root, path);
    const inside = relative(root, target);
    if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) return null;
    // The folders from the root's first child down to the path's own folder (the path itself, when it is one).
    const parts = inside.split(sep);
    const folders: string[] = [];
    for (let i = 1; i <= parts.length; i++) folders.push(join(root, ...parts.slice(0, i)));
    const sections: string[] = [];
    for (const folder of folders) {
      const file = join(folder, 'AGENTS.md');
      if (this.seen.has(file)) continue;
      this.seen.add(file);
      const left = NESTED_MEMORY_MAX_BYTES - this.used;
      if (left <= 0) break;
      if (!(await insideWorkspace(root, file))) continue;
      const read = await readCapped(file, left);
      if (!read || !read.text.trim()) continue;
      this.used += Buffer.byteLength(read.text);
      const where = relative(root, file);
      sections.push(
        `<nested_instructions path="${where}">\n${read.text.trimEnd()}${read.truncated ? `\n[truncated: the turn's ${NESTED_MEMORY_MAX_BYTES / 1024} KiB of nested instructions are used up]` : ''}\n</nested_instructions>`,
      );
    }
    return sections.length
      ? `Instructions for this part of the project (AGENTS.md of its folders, the nearest last), which hold beside the project's own:\n${sections.join('\n')}`
      : null;
  }
}

/** Whether `file` is in the workspace once links are followed: a repository's AGENTS.md that links to a file outside (a key) is not read. */
async function insideWorkspace(workspace: string, file: string): Promise<boolean> {
  const [root, real] = await Promise.all([realpath(workspace).catch(() => null), realpath(file).catch(() => null)]);
  return root !== null && real !== null && real.startsWith(root + sep);
}
