import { CommandPolicy } from './tool';

/**
 * The organization's command policy, applied before Execute runs anything.
 *
 * A command is split into simple commands on `&&`, `||`, `;`, `|`, `&`, newlines and parentheses, and the
 * commands inside `$(...)`, `<(...)`, `>(...)` and backticks are simple commands of their own (also inside
 * double quotes, where the shell runs them too). Quoted text and escaped characters do not split, and
 * `2>&1`, `&>` and `>|` are redirections, not separators. Shell keywords in front (`if`, `then`, `do`,
 * `!`, `{` ...) are dropped, and so are simple commands that are nothing but a closing keyword (`fi`,
 * `done`, `}` ...). Whitespace runs count as one space.
 *
 * A pattern matches a simple command when the command equals it or starts with it and a space, or, for a
 * pattern with `*`, when the pattern matches the whole command as a glob (`*` = any characters).
 *
 * The denylist and blocklist are conservative: they also match the command with its quotes and backslashes
 * removed (`"rm" -rf` is `rm -rf`), without leading variable assignments (`X=1 rm -rf`), without wrappers
 * (`sudo`, `env`, `command`, `exec`, `nohup`, `time`, `nice`, `xargs`, `builtin`), with a path to a program
 * cut to its name (`/bin/rm -rf`), and the commands a shell runs from `sh -c '...'`, `bash -c` or `eval`.
 * The allowlist (when not empty) needs every simple command to match one of its patterns as written or
 * with its quotes removed: `CI=1 npm test` is not `npm test`, nor is `sudo npm test`.
 */
export function checkCommand(command: string, policy: CommandPolicy): string | null {
  const denylist = patterns(policy?.commandDenylist);
  const blocklist = patterns(policy?.commandBlocklist);
  const allowlist = patterns(policy?.commandAllowlist);
  const simple = simpleCommands(command);

  for (const part of simple) {
    const forms = denyForms(part);
    for (const [rule, list] of [['commandDenylist', denylist], ['commandBlocklist', blocklist]] as const) {
      const pattern = list.find((p) => forms.some((form) => matches(form, p)));
      if (pattern !== undefined) return `${rule}: ${JSON.stringify(pattern)}`;
    }
  }
  if (Array.isArray(policy?.commandAllowlist) && policy.commandAllowlist.length > 0) {
    for (const part of simple) {
      const forms = [part, dequote(part)];
      if (!allowlist.some((p) => forms.some((form) => matches(form, p)))) return `commandAllowlist: ${JSON.stringify(part)} is not on the allowlist`;
    }
  }
  return null;
}

/** The patterns of a list, whitespace normalized; empty patterns match nothing. */
const patterns = (list: unknown): string[] => (Array.isArray(list) ? list.filter((p): p is string => typeof p === 'string').map(normalize).filter((p) => p !== '') : []);

/** Whitespace runs (and escaped line ends) as one space, trimmed. */
const normalize = (text: string): string => text.replace(/\\\n/g, ' ').replace(/\s+/g, ' ').trim();

/** True when `pattern` matches the simple command (both normalized). */
export function matches(command: string, pattern: string): boolean {
  if (command === pattern || command.startsWith(`${pattern} `)) return true;
  if (!pattern.includes('*')) return false;
  const glob = pattern
    .split('*')
    .map((piece) => piece.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[\\s\\S]*');
  return new RegExp(`^${glob}$`).test(command);
}

const LEADING_KEYWORDS = new Set(['if', 'then', 'else', 'elif', 'do', 'while', 'until', '!', '{']);
/** Simple commands that are only a keyword: nothing runs. */
const BARE_KEYWORDS = new Set(['fi', 'done', 'esac', '}', '{', '!', 'then', 'else', 'do']);
const WRAPPERS = new Set(['sudo', 'env', 'command', 'builtin', 'exec', 'nohup', 'time', 'nice', 'xargs']);

/** The simple commands of a command line, normalized, without leading keywords; empty ones left out. */
export function simpleCommands(command: string): string[] {
  const result: string[] = [];
  for (const raw of splitCommand(command)) {
    let part = normalize(raw);
    for (let word = part.split(' ')[0]; LEADING_KEYWORDS.has(word) && part !== word; word = part.split(' ')[0]) part = part.slice(word.length + 1);
    if (part === '' || BARE_KEYWORDS.has(part) || /^[<>]+$/.test(part)) continue;
    result.push(part);
  }
  return result;
}

/** Where the scanner is: in a command list (the top, a substitution or backticks) or inside quotes. */
type Frame = { kind: 'top' | 'substitution' | 'backticks' | 'double' | 'single'; saved?: string };

/** Splits a command line into its raw simple commands (see checkCommand). */
export function splitCommand(command: string): string[] {
  const parts: string[] = [];
  const stack: Frame[] = [{ kind: 'top' }];
  let current = '';
  const flush = () => {
    parts.push(current);
    current = '';
  };
  /** Starts a nested command list: the text so far waits until it ends. */
  const open = (kind: 'substitution' | 'backticks') => {
    stack.push({ kind, saved: current });
    current = '';
  };
  const close = () => {
    const frame = stack.pop()!;
    flush();
    current = frame.saved ?? '';
  };

  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    const next = command[i + 1];
    const frame = stack[stack.length - 1];
    if (frame.kind === 'single') {
      if (c === "'") stack.pop();
      current += c;
    } else if (c === '\\' && next !== undefined) {
      current += c + next;
      i += 1;
    } else if (frame.kind === 'double') {
      if (c === '"') stack.pop();
      if (c === '$' && next === '(') {
        open('substitution');
        i += 1;
      } else if (c === '`') open('backticks');
      else current += c;
    } else if (c === "'" || c === '"') {
      stack.push({ kind: c === "'" ? 'single' : 'double' });
      current += c;
    } else if ((c === '$' || c === '<' || c === '>') && next === '(') {
      open('substitution');
      i += 1;
    } else if (c === '`') {
      if (frame.kind === 'backticks') close();
      else open('backticks');
    } else if (c === ')') {
      if (frame.kind === 'substitution') close();
      else flush();
    } else if (c === '(' || c === ';' || c === '\n') {
      flush();
    } else if (c === '&') {
      if (current.endsWith('>') || current.endsWith('<') || next === '>') current += c; // 2>&1, <&3, &>file
      else {
        flush();
        if (next === '&') i += 1;
      }
    } else if (c === '|') {
      if (current.endsWith('>')) current += c; // >|file
      else {
        flush();
        if (next === '|' || next === '&') i += 1;
      }
    } else {
      current += c;
    }
  }
  // Unclosed quotes and substitutions: what was read still counts.
  while (stack.length > 1) {
    const frame = stack.pop()!;
    if (frame.saved !== undefined) {
      flush();
      current = frame.saved;
    }
  }
  flush();
  return parts;
}

/** The command without quotes and backslashes, as the shell passes its words on (roughly). */
export function dequote(command: string): string {
  let out = '';
  let quote: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote === "'") {
      if (c === "'") quote = null;
      else out += c;
    } else if (c === '\\' && i + 1 < command.length && (quote === null || '"\\$`'.includes(command[i + 1]))) {
      out += command[i + 1];
      i += 1;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else out += c;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else {
      out += c;
    }
  }
  return normalize(out);
}

/** The words of a simple command (normalized), quotes and escapes kept: `a "b c"` is `a` and `"b c"`. */
function shellWords(command: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote === null && c === ' ') {
      if (word !== '') words.push(word);
      word = '';
      continue;
    }
    if (c === '\\' && quote !== "'" && i + 1 < command.length) {
      word += c + command[i + 1];
      i += 1;
      continue;
    }
    if (quote === null && (c === "'" || c === '"')) quote = c;
    else if (c === quote) quote = null;
    word += c;
  }
  if (word !== '') words.push(word);
  return words;
}

/**
 * The forms of a simple command the denylist and blocklist are matched against: as written, without
 * quotes, and (repeatedly) without leading assignments and wrappers and with a program path cut to its
 * name; plus the simple commands of `sh -c '...'` and `eval ...`.
 */
function denyForms(part: string, depth = 0): string[] {
  const forms = new Set([part, dequote(part)]);
  let words = shellWords(part);
  for (let guard = 0; guard < 20 && words.length > 0; guard++) {
    const first = dequote(words[0]);
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(first) || WRAPPERS.has(first)) words = words.slice(1);
    else if (first.includes('/') && !first.endsWith('/')) words = [first.slice(first.lastIndexOf('/') + 1), ...words.slice(1)];
    else break;
    const form = words.join(' ');
    if (form !== '') forms.add(form).add(dequote(form));
  }
  if (depth < 3) {
    for (const candidate of [...forms]) {
      const inner = /^(?:ba|da|z|k|c|tc|fi)?sh(?: .*?)? -[A-Za-z]*c[A-Za-z]* (.*)$/.exec(candidate)?.[1] ?? /^eval (.*)$/.exec(candidate)?.[1];
      if (inner !== undefined) for (const simple of simpleCommands(inner)) for (const f of denyForms(simple, depth + 1)) forms.add(f);
    }
  }
  return [...forms];
}
