import {
  Chain,
  Construct,
  Dialect,
  literalWord,
  normalize,
  parseShell,
  ShellRedirect,
  ShellScript,
  ShellSyntaxError,
  ShellWord,
  SimpleCommand,
} from './shell-syntax';
import { CommandPolicy } from './tool';

/**
 * The organization's command policy, applied before Execute runs anything.
 *
 * A command line is read by a real shell parser (mvdan/sh, see shell-syntax.ts), twice: as /bin/sh reads
 * it (POSIX; dash on Debian) and as bash reads it (the sandbox runs commands with bash). A command line
 * that either cannot parse is refused: what cannot be read cannot be checked. Every simple command
 * counts, wherever it is: in lists and pipelines, subshells and blocks, `if`/`while`/`for`/`case` and
 * function bodies, `$(...)`, backticks, `<(...)`, here-documents, and the code given to `sh -c`,
 * `bash -c`, `eval`, `env -S`, `su -c`, `find -exec sh -c` or fed to a shell as a here-document, which is
 * parsed in turn.
 *
 * Patterns are parsed the same way. A pattern that is one simple command matches a simple command
 * (its words, without redirections) when the command equals it or starts with it and a space, or, for a
 * pattern with `*`, when the pattern matches the whole command as a glob (`*` = any characters). A
 * pattern that is a pipeline or a list (`curl * | sh`, `make && make install`) matches where the
 * command line has that sequence of simple commands joined by the same operators, each matched as
 * above; in a pipeline other commands may stand between them (`curl x | cat | sh` still pipes curl
 * into sh).
 *
 * The denylist and blocklist are conservative: they also match each command with its quotes and
 * backslashes removed (`"rm" -rf` is `rm -rf`), without leading variable assignments (`X=1 rm -rf`),
 * without wrappers and their options (`sudo -u root`, `env`, `command`, `exec`, `nohup`, `time`, `nice`,
 * `timeout 5`, `xargs` ...), with a path to a program cut to its name (`/bin/rm -rf`), with a glob
 * program name (`/bin/r?`) taken as any name it matches, with bash's brace expansion done, and as
 * the command of `find -exec`.
 *
 * The allowlist (when not empty) needs every simple command to match one of its patterns as written or
 * with its quotes removed (`CI=1 npm test` is not `npm test`, nor is `sudo npm test`), and a command
 * that writes to a file by redirection (anything but /dev/null, /dev/stdout, /dev/stderr or another
 * descriptor) needs a pattern that includes that redirection (`npm test > test.log`). It refuses what
 * no pattern can allow: redirections of compound commands, code for a shell that is computed when the
 * command runs, and what bash evaluates as arithmetic on values the command computes (`$((x))`,
 * `${a[$i]}`, `[[ $x -eq 1 ]]`, `${!x}`, `test -v`, `printf -v`): bash runs the `$(...)` in such a value.
 */
export function checkCommand(command: string, policy: CommandPolicy): string | null {
  const denylist = patternsOf(policy?.commandDenylist);
  const blocklist = patternsOf(policy?.commandBlocklist);
  const hasAllowlist = Array.isArray(policy?.commandAllowlist) && policy.commandAllowlist.length > 0;
  if (denylist.length === 0 && blocklist.length === 0 && !hasAllowlist) return null;

  const analysis = analyzeCommand(command);
  const firstRule = denylist.length > 0 ? 'commandDenylist' : blocklist.length > 0 ? 'commandBlocklist' : 'commandAllowlist';
  const unchecked = analysis.failure ?? uncheckable(analysis, denylist.length > 0 || blocklist.length > 0);
  if (unchecked !== null) return `${firstRule}: ${unchecked}`;

  for (const [rule, list] of [
    ['commandDenylist', denylist],
    ['commandBlocklist', blocklist],
  ] as const) {
    for (const cmd of analysis.commands) {
      const forms = analysis.denyForms.get(cmd)!;
      const pattern = list.find((p) => p.kind === 'simple' && redirectsPresent(cmd, p) && forms.some((form) => wordsMatch(form, p)));
      if (pattern !== undefined) return `${rule}: ${JSON.stringify(pattern.source)}`;
    }
    for (const pattern of list) {
      if (pattern.kind === 'simple') continue;
      if (analysis.chains.some((chain) => occurrences(chain, pattern, (cmd) => analysis.denyForms.get(cmd)!, true).length > 0))
        return `${rule}: ${JSON.stringify(pattern.source)}`;
    }
  }
  return hasAllowlist ? allowlistRefusal(analysis, patternsOf(policy.commandAllowlist)) : null;
}

/**
 * What no list can be checked against (the end of a sentence), or null: shell code computed when the
 * command runs; and, for the denylist and blocklist, programs named when it runs and code written where
 * bash evaluates it as arithmetic. (Arithmetic on variables and command output is refused by the
 * allowlist only: a denylist cannot see what a command computes, and such arithmetic is common.)
 */
function uncheckable(analysis: CommandAnalysis, denying: boolean): string | null {
  if (analysis.dynamicCode.length > 0)
    return `${JSON.stringify(analysis.dynamicCode[0])} runs shell code that is computed when it runs, so it cannot be checked`;
  if (!denying) return null;
  for (const cmd of analysis.commands) {
    const computed = analysis.denyForms.get(cmd)!.some((form) => form[0].value === null && !ASSIGNMENT.test(form[0].text));
    if (computed) return `${JSON.stringify(cmd.raw)} runs a program whose name is computed when it runs, so it cannot be checked`;
    if (subscriptedName(cmd))
      return `${JSON.stringify(cmd.raw)} names a variable with a subscript that expands, which bash evaluates as arithmetic and can run commands in, so it cannot be checked`;
  }
  const code = analysis.constructs.get('codeInArithmetic');
  return code === undefined ? null : `${JSON.stringify(code)} has shell code where bash evaluates arithmetic, which runs it, so it cannot be checked`;
}

/** What a command line runs, read in both dialects, with the code it hands to shells read too. */
export interface CommandAnalysis {
  /** Why the command line cannot be checked (a sentence), or null. */
  failure: string | null;
  /** Every simple command of every reading. */
  commands: SimpleCommand[];
  chains: Chain[];
  compoundRedirects: ShellRedirect[];
  constructs: Map<Construct, string>;
  /** Each command's forms for the denylist and blocklist (see denyForms). */
  denyForms: Map<SimpleCommand, ShellWord[][]>;
  /** Each command's commands run by wrappers (`sudo X`, `xargs X`, `find -exec X`): the allowlist must allow them too. */
  wrapped: Map<SimpleCommand, ShellWord[][]>;
  /** Commands that hand a shell code computed when they run (`bash -c "$X"`), as written. */
  dynamicCode: string[];
}

const MAX_NESTING = 4;

/** Reads a command line as /bin/sh and bash do, and the shell code inside it (see checkCommand). */
export function analyzeCommand(command: string): CommandAnalysis {
  const analysis: CommandAnalysis = {
    failure: null,
    commands: [],
    chains: [],
    compoundRedirects: [],
    constructs: new Map(),
    denyForms: new Map(),
    wrapped: new Map(),
    dynamicCode: [],
  };
  analysis.failure = read(analysis, command, ['posix', 'bash'], null, 0);
  return analysis;
}

/** Reads `code` in each dialect into the analysis; returns why it cannot be checked, or null. */
function read(analysis: CommandAnalysis, code: string, dialects: readonly Dialect[], origin: string | null, depth: number): string | null {
  if (depth >= MAX_NESTING) return `${JSON.stringify(origin)} nests shells more than ${MAX_NESTING} deep, so the command cannot be checked`;
  for (const dialect of dialects) {
    let script: ShellScript;
    try {
      script = parseShell(code, dialect);
    } catch (error) {
      if (!(error instanceof ShellSyntaxError)) throw error;
      const what = origin === null ? 'the command' : `the code that ${JSON.stringify(origin)} runs`;
      const how = dialect === 'posix' ? 'as /bin/sh reads it' : 'as bash reads it';
      return `${what} could not be parsed ${how} (${error.message}), so it cannot be checked`;
    }
    analysis.commands.push(...script.commands);
    analysis.chains.push(...script.chains);
    analysis.compoundRedirects.push(...script.compoundRedirects);
    for (const [construct, where] of script.constructs) if (!analysis.constructs.has(construct)) analysis.constructs.set(construct, where);
    for (const cmd of script.commands) {
      const wrapped: ShellWord[][] = [];
      const forms = denyForms(cmd, wrapped);
      analysis.denyForms.set(cmd, forms);
      analysis.wrapped.set(cmd, wrapped);
      for (const inner of innerCode(cmd, forms)) {
        if (inner.code === null) analysis.dynamicCode.push(cmd.raw);
        const failure = read(analysis, inner.text, inner.dialects, cmd.raw, depth + 1);
        if (failure !== null) return failure;
      }
    }
  }
  return null;
}

// ---- patterns ----

interface SimplePattern {
  kind: 'simple';
  source: string;
  /** The words as written, normalized. */
  text: string;
  first: string;
  redirects: ShellRedirect[];
}
interface ChainPattern {
  kind: Chain['kind'];
  source: string;
  elements: SimplePattern[];
  ops: string[];
}
type Pattern = SimplePattern | ChainPattern;

const parsedPatterns = new Map<string, Pattern | null>();

/** The patterns of a list, parsed; empty patterns match nothing. */
function patternsOf(list: unknown): Pattern[] {
  if (!Array.isArray(list)) return [];
  return list
    .filter((p): p is string => typeof p === 'string')
    .map(parsePattern)
    .filter((p): p is Pattern => p !== null);
}

/** A pattern parsed as bash reads it; one that is not a simple command or a chain of them matches as text. */
function parsePattern(source: string): Pattern | null {
  const known = parsedPatterns.get(source);
  if (known !== undefined) return known;
  let pattern: Pattern | null = null;
  if (normalize(source) !== '') {
    pattern = { kind: 'simple', source, text: normalize(source), first: normalize(source).split(' ')[0], redirects: [] };
    try {
      const script = parseShell(source, 'bash');
      const simple = (cmd: SimpleCommand): SimplePattern => {
        const text = normalize([...cmd.assigns, ...cmd.words].map((w) => w.raw).join(' '));
        return { kind: 'simple', source, text, first: text.split(' ')[0], redirects: cmd.redirects };
      };
      const [chain] = script.chains;
      if (script.commands.length === 1 && script.chains.length === 0) pattern = simple(script.commands[0]);
      else if (script.chains.length === 1 && chain.elements.every((e) => e !== null) && chain.elements.length === script.commands.length) {
        pattern = { kind: chain.kind, source, elements: chain.elements.map((e) => simple(e!)), ops: chain.ops };
      }
    } catch (error) {
      if (!(error instanceof ShellSyntaxError)) throw error;
    }
  }
  if (parsedPatterns.size >= 10_000) parsedPatterns.clear();
  parsedPatterns.set(source, pattern);
  return pattern;
}

/** True when `pattern` matches the simple command (both normalized): equal, a prefix and a space, or a `*` glob. */
export function matches(command: string, pattern: string): boolean {
  if (command === pattern || command.startsWith(`${pattern} `)) return true;
  if (!pattern.includes('*')) return false;
  return globRegExp(pattern).test(command);
}

const globRegExp = (pattern: string): RegExp =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((piece) => piece.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]*')}$`,
  );

/** Whether the command has every redirection the pattern names (for the denylist and blocklist). */
const redirectsPresent = (cmd: SimpleCommand, pattern: SimplePattern): boolean =>
  pattern.redirects.every((p) => cmd.redirects.some((r) => redirectMatches(r, p)));

/** Whether a form (the words of a command) matches a simple pattern's words, as written or with quotes removed. */
function wordsMatch(words: ShellWord[], pattern: SimplePattern): boolean {
  const written = normalize(words.map((w) => w.raw).join(' '));
  const dequoted = normalize(words.map((w) => w.text).join(' '));
  if (matches(written, pattern.text) || matches(dequoted, pattern.text)) return true;
  // A program named by a glob (`/bin/r?`) may be any program the glob matches.
  const program = words[0];
  if (program?.glob && shellGlob(program.text).test(pattern.first)) {
    return matches(normalize([pattern.first, ...words.slice(1).map((w) => w.text)].join(' ')), pattern.text);
  }
  return false;
}

/** A shell glob (`*`, `?`, `[...]`) as a regular expression over a whole word. */
function shellGlob(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') out += '.*';
    else if (c === '?') out += '.';
    else if (c === '[' && glob.indexOf(']', i + 2) > 0) {
      const end = glob.indexOf(']', i + 2);
      out += `[${glob
        .slice(i + 1, end)
        .replace(/^!/, '^')
        .replace(/\\/g, '\\\\')}]`;
      i = end;
    } else out += c.replace(/[.+?^${}()|[\]\\*]/g, '\\$&');
  }
  return new RegExp(`^${out}$`, 's');
}

/**
 * Where a chain pattern occurs in a chain: the indexes of the elements it matched, for each occurrence.
 * In a pipeline other commands may stand between the pattern's; in and-or lists and lists they may not.
 */
function occurrences(chain: Chain, pattern: ChainPattern, formsOf: (cmd: SimpleCommand) => ShellWord[][], withRedirects: boolean): number[][] {
  if (chain.kind !== pattern.kind) return [];
  const fits = (i: number, j: number) => {
    const element = chain.elements[i];
    if (element === null || (withRedirects && !redirectsPresent(element, pattern.elements[j]))) return false;
    return formsOf(element).some((form) => wordsMatch(form, pattern.elements[j]));
  };
  const found: number[][] = [];
  for (let start = 0; start < chain.elements.length; start++) {
    if (!fits(start, 0)) continue;
    const matched = [start];
    if (chain.kind === 'pipe') {
      for (let i = start + 1; i < chain.elements.length && matched.length < pattern.elements.length; i++) if (fits(i, matched.length)) matched.push(i);
    } else {
      while (matched.length < pattern.elements.length) {
        const i = start + matched.length;
        if (i >= chain.elements.length || chain.ops[i - 1] !== pattern.ops[matched.length - 1] || !fits(i, matched.length)) break;
        matched.push(i);
      }
    }
    if (matched.length === pattern.elements.length) found.push(matched);
  }
  return found;
}

// ---- denylist forms ----

/** Programs that run the rest of their arguments as a command: options that take a value, and operands before the command. */
const WRAPPERS: Record<string, { values?: string; longValues?: string[]; operands?: number }> = {
  sudo: { values: 'CDghpRrTtUu', longValues: ['chdir', 'close-from', 'group', 'host', 'prompt', 'role', 'type', 'user', 'other-user', 'command-timeout'] },
  doas: { values: 'Cu' },
  env: { values: 'uCS', longValues: ['unset', 'chdir', 'split-string'] },
  command: {},
  builtin: {},
  exec: { values: 'a' },
  nohup: {},
  time: { values: 'fo', longValues: ['format', 'output'] },
  nice: { values: 'n', longValues: ['adjustment'] },
  ionice: { values: 'cnpPu', longValues: ['class', 'classdata'] },
  xargs: { values: 'aEdILnPs', longValues: ['arg-file', 'delimiter', 'max-lines', 'max-args', 'max-procs', 'max-chars', 'process-slot-var'] },
  setsid: {},
  stdbuf: { values: 'ioe', longValues: ['input', 'output', 'error'] },
  timeout: { values: 'ks', longValues: ['kill-after', 'signal'], operands: 1 },
  chroot: { longValues: ['userspec', 'groups'], operands: 1 },
  busybox: {},
  unbuffer: {},
  caffeinate: {},
};
const SHELLS: Record<string, readonly Dialect[]> = {
  sh: ['posix', 'bash'],
  dash: ['posix'],
  ash: ['posix'],
  bash: ['bash'],
  rbash: ['bash'],
  zsh: ['bash', 'posix'],
  ksh: ['bash', 'posix'],
  mksh: ['bash', 'posix'],
};
/** bash's options that take a value (`bash -o pipefail -c ...`). */
const SHELL_VALUE_OPTIONS = new Set(['-o', '+o', '-O', '+O', '--rcfile', '--init-file']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

/**
 * The forms of a simple command the denylist and blocklist are matched against: as written (with its
 * assignments), and, repeatedly, without leading assignments, without a wrapper and its options, with a
 * program path cut to its name, with bash's brace expansion done, and the command of `find -exec`.
 */
function denyForms(cmd: SimpleCommand, wrapped: ShellWord[][]): ShellWord[][] {
  const forms: ShellWord[][] = [];
  const seen = new Set<string>();
  const add = (words: ShellWord[], depth: number, byWrapper = false) => {
    const key = words.map((w) => w.text).join('\u0000');
    if (words.length === 0 || depth > 12) return;
    if (byWrapper) wrapped.push(words);
    if (seen.has(key)) return;
    seen.add(key);
    forms.push(words);
    const [first, ...rest] = words;
    const name = first.text;
    if (ASSIGNMENT.test(name)) add(rest, depth + 1);
    if (name.includes('/') && !name.endsWith('/'))
      add([{ ...first, ...literalWord(name.slice(name.lastIndexOf('/') + 1)), glob: first.glob }, ...rest], depth + 1);
    if (words.some((w) => w.braces))
      add(
        words.flatMap((w) => (w.braces ? expandBraces(w.text).map(literalWord) : [w])),
        depth + 1,
      );
    const wrapper = WRAPPERS[name];
    if (wrapper) for (const start of commandStarts(words, wrapper)) add(words.slice(start), depth + 1, true);
    if (name === 'find') {
      for (let i = 1; i < words.length; i++) {
        if (!['-exec', '-execdir', '-ok', '-okdir'].includes(words[i].text)) continue;
        let end = i + 1;
        while (end < words.length && words[end].text !== ';' && words[end].text !== '+') end++;
        add(words.slice(i + 1, end), depth + 1, true);
      }
    }
  };
  add([...cmd.assigns, ...cmd.words], 0);
  if (cmd.assigns.length > 0) add(cmd.words, 0);
  return forms;
}

/** Where the command a wrapper runs may start: after its options (and their values) and operands. */
function commandStarts(words: ShellWord[], wrapper: { values?: string; longValues?: string[]; operands?: number }): number[] {
  const starts: number[] = [];
  let i = 1;
  for (; i < words.length; i++) {
    const w = words[i].text;
    if (w === '--') {
      i += 1;
      break;
    }
    if (!w.startsWith('-') || w === '-') break;
    if (w.startsWith('--')) {
      if (!w.includes('=') && wrapper.longValues?.includes(w.slice(2))) i += 1;
      else if (!w.includes('=')) starts.push(i + 2); // an option not known here may take the next word as its value
      continue;
    }
    const letters = w.slice(1);
    const valueAt = [...letters].findIndex((c) => wrapper.values?.includes(c));
    if (valueAt === letters.length - 1) i += 1;
    else if (valueAt < 0) starts.push(i + 2);
  }
  starts.unshift(i + (wrapper.operands ?? 0));
  return starts.filter((s) => s < words.length);
}

/** bash's brace expansion of one word (`{a,b}c`, `{1..3}`), at most 256 words. */
export function expandBraces(word: string): string[] {
  let depth = 0;
  let open = -1;
  for (let i = 0; i < word.length; i++) {
    if (word[i] === '{') {
      if (depth === 0) open = i;
      depth += 1;
    } else if (word[i] === '}' && depth > 0) {
      depth -= 1;
      if (depth !== 0) continue;
      const inner = word.slice(open + 1, i);
      const alternatives = splitTopLevel(inner);
      const sequence = /^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])$/.exec(inner);
      let items: string[] | null = alternatives.length > 1 ? alternatives : null;
      if (sequence) items = range(sequence[1], sequence[2]);
      if (items === null) continue;
      const prefix = word.slice(0, open);
      const out: string[] = [];
      for (const item of items) for (const rest of expandBraces(item + word.slice(i + 1))) if (out.length < 256) out.push(prefix + rest);
      return out.flatMap((w) => (w === word ? [w] : expandBraces(w))).slice(0, 256);
    }
  }
  return [word];
}

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '{') depth += 1;
    else if (text[i] === '}') depth -= 1;
    else if (text[i] === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

function range(from: string, to: string): string[] {
  const numeric = /\d/.test(from);
  const a = numeric ? Number(from) : from.charCodeAt(0);
  const b = numeric ? Number(to) : to.charCodeAt(0);
  const out: string[] = [];
  for (let n = a; out.length < 256 && (a <= b ? n <= b : n >= b); n += a <= b ? 1 : -1) out.push(numeric ? String(n) : String.fromCharCode(n));
  return out;
}

/** Shell code a command runs: `sh -c CODE`, `eval WORDS`, `env -S STRING`, `su -c CODE`, a here-document fed to a shell. */
function innerCode(cmd: SimpleCommand, forms: ShellWord[][]): Array<{ text: string; code: string | null; dialects: readonly Dialect[] }> {
  const found = new Map<string, { text: string; code: string | null; dialects: readonly Dialect[] }>();
  const add = (word: ShellWord | { text: string; value: string | null }, dialects: readonly Dialect[]) => {
    if (!found.has(word.text)) found.set(word.text, { text: word.text, code: word.value, dialects });
  };
  for (const words of forms) {
    const name = words[0].text;
    if (name === 'eval' && words.length > 1) {
      const rest = words.slice(1);
      add({ text: rest.map((w) => w.text).join(' '), value: rest.every((w) => w.value !== null) ? rest.map((w) => w.value).join(' ') : null }, [cmd.dialect]);
    }
    if (name === 'env' || name === 'su' || name === 'runuser' || name === 'flock') {
      for (let i = 1; i < words.length; i++) {
        const w = words[i].text;
        const split = name === 'env' ? ['-S', '--split-string'] : ['-c', '--command'];
        if (split.includes(w) && words[i + 1]) add(words[i + 1], ['posix', 'bash']);
        const joined = split.find((s) => s.startsWith('--') && w.startsWith(`${s}=`));
        if (joined) add({ text: w.slice(joined.length + 1), value: words[i].value === null ? null : w.slice(joined.length + 1) }, ['posix', 'bash']);
      }
    }
    const dialects = SHELLS[name];
    if (!dialects) continue;
    let command = false;
    let i = 1;
    for (; i < words.length; i++) {
      const w = words[i].text;
      if (w === '--' || w === '-') {
        i += 1;
        break;
      }
      if (!/^[-+]/.test(w)) break;
      if (SHELL_VALUE_OPTIONS.has(w)) i += 1;
      else if (/^-[A-Za-z]*c/.test(w)) command = true;
    }
    if (command && words[i]) add(words[i], dialects);
    else if (!command && i >= words.length) {
      // No script file: the shell reads its standard input, here a here-document or here-string.
      for (const r of cmd.redirects) {
        if (r.heredoc) add(r.heredoc, dialects);
        else if (r.op === '<<<') add(r.target, dialects);
      }
    }
  }
  return [...found.values()];
}

// ---- allowlist ----

const HARMLESS_TARGETS = new Set(['/dev/null', '/dev/stdout', '/dev/stderr']);
const WRITING_OPS = new Set(['>', '>>', '>|', '&>', '&>>', '<>']);

/** The redirections that write to a file: all output but to /dev/null, stdout, stderr or a descriptor. */
export function fileWrites(redirects: ShellRedirect[]): ShellRedirect[] {
  return redirects.filter((r) => {
    if (r.target.value !== null && HARMLESS_TARGETS.has(r.target.value)) return false;
    if (r.op === '>&' || r.op === '<&') return r.target.value === null || !/^(\d+|-)$/.test(r.target.value);
    return WRITING_OPS.has(r.op);
  });
}

function redirectMatches(r: ShellRedirect, pattern: ShellRedirect): boolean {
  const fd = (x: ShellRedirect) => x.fd ?? (x.op.startsWith('<') ? '0' : '1');
  if (r.op !== pattern.op || fd(r) !== fd(pattern)) return false;
  const target = pattern.target.text;
  return target.includes('*') ? globRegExp(target).test(r.target.text) : target === r.target.text;
}

/** Whether a builtin that takes variable names is given one with a subscript that expands (`test -v 'a[$(cmd)]'`). */
function subscriptedName(cmd: SimpleCommand): boolean {
  const [program, ...args] = cmd.words;
  return (
    cmd.dialect === 'bash' && program?.value != null && NAME_BUILTINS.has(program.value) && args.some((w) => w.value !== null && /\[.*[$`]/s.test(w.value))
  );
}

/** Builtins that take variable names, whose subscripts (`a[$(cmd)]`) bash evaluates as arithmetic. */
const NAME_BUILTINS = new Set([
  'test',
  '[',
  'printf',
  'read',
  'unset',
  'declare',
  'typeset',
  'local',
  'export',
  'readonly',
  'mapfile',
  'readarray',
  'getopts',
  'wait',
  'let',
]);

/** Why the allowlist refuses the analyzed command line, or null. */
function allowlistRefusal(analysis: CommandAnalysis, allowlist: Pattern[]): string | null {
  const simplePatterns = allowlist.filter((p): p is SimplePattern => p.kind === 'simple');
  const byChain = new Map<SimpleCommand, SimplePattern[]>();
  for (const pattern of allowlist) {
    if (pattern.kind === 'simple') continue;
    for (const chain of analysis.chains) {
      for (const found of occurrences(chain, pattern, allowForms, false)) {
        found.forEach((index, j) => byChain.set(chain.elements[index]!, [...(byChain.get(chain.elements[index]!) ?? []), pattern.elements[j]]));
      }
    }
  }
  for (const cmd of analysis.commands) {
    const writes = fileWrites(cmd.redirects);
    if (cmd.words.length === 0 && cmd.assigns.length === 0 && writes.length === 0) continue;
    const forms = allowForms(cmd);
    const allowing = [...simplePatterns.filter((p) => forms.some((form) => wordsMatch(form, p))), ...(byChain.get(cmd) ?? [])];
    if (allowing.length === 0) return `commandAllowlist: ${JSON.stringify(cmd.raw)} is not on the allowlist`;
    const unallowed = analysis.wrapped.get(cmd)!.find((words) => !simplePatterns.some((p) => wordsMatch(words, p)));
    if (unallowed)
      return `commandAllowlist: ${JSON.stringify(normalize(unallowed.map((w) => w.raw).join(' ')))}, which ${JSON.stringify(cmd.raw)} runs, is not on the allowlist`;
    if (writes.length > 0 && !allowing.some((p) => writes.every((w) => p.redirects.some((pr) => redirectMatches(w, pr))))) {
      return `commandAllowlist: ${JSON.stringify(cmd.raw)} writes to a file (${writes.map((w) => w.raw).join(', ')}), and no pattern on the allowlist includes that redirection`;
    }
    const evaluated = evaluatedNames(cmd);
    if (evaluated !== null)
      return `commandAllowlist: ${JSON.stringify(cmd.raw)} ${evaluated}, which bash evaluates as arithmetic and can run commands in, so no allowlist can allow it`;
  }
  const compound = fileWrites(analysis.compoundRedirects)[0];
  if (compound)
    return `commandAllowlist: the redirection ${JSON.stringify(compound.raw)} of a compound command writes to a file, and no pattern on the allowlist can include it`;
  for (const construct of ['dynamicArithmetic', 'indirection', 'transformation'] as const) {
    const where = analysis.constructs.get(construct);
    if (where !== undefined) return `commandAllowlist: ${JSON.stringify(where)} ${CONSTRUCT_RISKS[construct]}, so no allowlist can allow it`;
  }
  return null;
}

export const CONSTRUCT_RISKS = {
  dynamicArithmetic: 'makes bash evaluate values as arithmetic, which runs any $(...) written in them',
  indirection: 'expands a variable named by another variable, which runs any $(...) in an array subscript of that name',
  transformation: 'transforms a value with a ${...@...} operator, which can expand it as a prompt and run commands',
} as const;

/** The forms the allowlist matches: as written and with quotes removed, assignments included. */
const allowForms = (cmd: SimpleCommand): ShellWord[][] => [[...cmd.assigns, ...cmd.words]];

/**
 * For builtins that take variable names (test -v, printf -v, read, unset, declare ...): a name with a
 * subscript that expands, or words computed when the command runs that could become such a name.
 */
export function evaluatedNames(cmd: SimpleCommand): string | null {
  if (subscriptedName(cmd)) return 'names a variable with a subscript that expands';
  const [program, ...args] = cmd.words;
  if (cmd.dialect !== 'bash' || program?.value == null || !NAME_BUILTINS.has(program.value)) return null;
  const name = program.value;
  if (name === 'test' || name === '[') {
    if (args.some((w) => w.value === '-v' || w.value === '-R')) return 'tests a variable by name';
    if (args.some((w, i) => w.splits || (w.value === null && args[i + 1]?.value === null)))
      return 'tests words computed when it runs, which may name a variable';
    return null;
  }
  if (name === 'printf') return args[0] && (args[0].value === null || args[0].value === '-v') ? 'may assign to a variable by name' : null;
  return args.some((w) => w.value === null) ? 'takes variable names computed when it runs' : null;
}
