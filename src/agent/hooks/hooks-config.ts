import Ajv from 'ajv';
import { readFile } from 'node:fs/promises';

/** The hook events the agent fires: the spec's five and the rest of the reference agent's published set. */
export const HOOK_EVENTS = [
  'PreToolUse',
  'PostToolUse',
  'UserPromptSubmit',
  'Notification',
  'Stop',
  'SubagentStop',
  'SessionStart',
  'SessionEnd',
  'PreCompact',
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** Events whose matcher applies (to the tool's name). */
export const TOOL_EVENTS: ReadonlySet<HookEvent> = new Set(['PreToolUse', 'PostToolUse']);

export interface HookCommand {
  type: 'command';
  command: string;
  /** Seconds; 60 when absent. */
  timeout?: number;
}

export interface HookEntry {
  matcher?: string;
  hooks: HookCommand[];
}

export type HooksConfig = Partial<Record<HookEvent, HookEntry[]>>;

const entrySchema = {
  type: 'object',
  required: ['hooks'],
  additionalProperties: false,
  properties: {
    matcher: { type: 'string' },
    hooks: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'command'],
        additionalProperties: false,
        properties: {
          type: { const: 'command' },
          command: { type: 'string', minLength: 1 },
          timeout: { type: 'number', exclusiveMinimum: 0, maximum: 86_400 },
        },
      },
    },
  },
};
const hooksSchema = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(HOOK_EVENTS.map((event) => [event, { type: 'array', items: entrySchema }])),
};
const validate = new Ajv({ allErrors: true }).compile<HooksConfig>(hooksSchema);

/** A hooks file that could not be used, and why (the agent goes on without hooks). */
export class HooksConfigError extends Error {}

/**
 * Reads the user-level hooks file. Both forms: the whole file is the hooks object, or it sits under
 * a top-level `hooks` key (beside other settings, such as `instructions`). A missing file is no hooks; a bad one throws a
 * HooksConfigError naming the file and every problem.
 */
export async function loadHooks(path: string): Promise<HooksConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new HooksConfigError(`${path}: cannot be read (${(error as Error).message})`);
  }
  return parseHooks(text, path);
}

export function parseHooks(text: string, path = 'hooks file'): HooksConfig {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (error) {
    throw new HooksConfigError(`${path}: not valid JSON (${(error as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new HooksConfigError(`${path}: must be a JSON object`);
  // The settings form: hooks under `hooks`, beside the other settings (`instructions`, see ../memory.ts), any of them absent.
  const settings = 'hooks' in parsed || 'instructions' in parsed;
  const hooks = settings ? ('hooks' in parsed ? (parsed as { hooks: unknown }).hooks : {}) : parsed;
  const where = settings ? '/hooks' : '';
  if (!validate(hooks)) {
    const problems = (validate.errors ?? []).map(
      (e) => `${where}${e.instancePath || '/'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
    );
    throw new HooksConfigError(`${path}: ${problems.join('; ')}`);
  }
  for (const [event, entries] of Object.entries(hooks)) {
    for (const [i, entry] of (entries ?? []).entries()) {
      if (entry.matcher && entry.matcher !== '*' && !isRegExp(entry.matcher)) {
        throw new HooksConfigError(`${path}: ${where}/${event}/${i}/matcher is not a valid regular expression: ${entry.matcher}`);
      }
    }
  }
  return hooks;
}

function isRegExp(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether an entry's matcher selects a tool: no matcher, `""` or `*` match every tool; otherwise a
 * case-sensitive regular expression that must match the whole tool name. On other events, every entry applies.
 */
export function matches(entry: HookEntry, event: HookEvent, toolName?: string): boolean {
  if (!TOOL_EVENTS.has(event)) return true;
  const matcher = entry.matcher;
  if (matcher === undefined || matcher === '' || matcher === '*') return true;
  return toolName !== undefined && new RegExp(`^(?:${matcher})$`).test(toolName);
}
