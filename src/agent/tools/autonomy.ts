import { analyzeCommand, checkCommand, CONSTRUCT_RISKS, evaluatedNames, fileWrites } from './command-policy';
import { ShellWord, SimpleCommand } from './shell-syntax';

/** Tools that change nothing: every level allows them. */
const READING_TOOLS = new Set(['Read', 'LS', 'Glob', 'Grep', 'Task', 'Skill', 'WebFetch', 'WebSearch', 'TodoWrite']);
const EDITING_TOOLS = new Set(['Create', 'Edit', 'ApplyPatch']);

/**
 * How a read-only program's arguments are checked at `low`. Options are allowed by name (an option not
 * listed, or an abbreviation of a long one, is refused), so an option that runs a program or writes a
 * file is refused without being named here.
 */
interface ReadOnlyProgram {
  /** No option or operand of the program runs another program or writes a file. */
  anyArguments?: true;
  /** Short options without a value, and those that take one (`-A 3`, `-A3`). */
  short?: string;
  shortValues?: string;
  /** Long options without a value, and those that take one (`--glob=x`, `--glob x`). */
  long?: string[];
  longValues?: string[];
  maxOperands?: number;
  /** Each operand must match. */
  operand?: RegExp;
  /** No options: the first argument must not be one (printf -v assigns to a variable). */
  noOptions?: true;
  /** Exactly one of these argument lists. */
  exactly?: string[][];
  /** Subcommands (the first argument) and how their arguments are checked. */
  subcommands?: Record<string, ReadOnlyProgram>;
  /** find: the primaries allowed, and those that take a value. */
  primaries?: Set<string>;
  primaryValues?: Set<string>;
}

const ANY: ReadOnlyProgram = { anyArguments: true };
const VERSION_ONLY = (...flags: string[]): ReadOnlyProgram => ({ exactly: flags.map((f) => [f]) });

/**
 * Programs that only read (`low` runs these and nothing else), with the options known not to run code
 * or write files. Left out on purpose: rg's --pre, --pre-glob, --search-zip and --hostname-bin (run
 * programs), sort's --compress-program and -o, uniq's output operand, tree's -o and -R, file's -z, -C
 * and -S, find's -exec/-ok/-delete/-fprint family, date's -s and clock operands, printf -v and test -v
 * (bash evaluates a subscript in the name), npm view (runs git for git specs), and `env`, `xargs`,
 * `less`, `man`, `awk`, `sed`, which run programs or code by design.
 *
 * git is refused, whatever the subcommand: a repository's own configuration (.git/config, which the agent
 * can write) names programs that git runs for read-only commands too — core.fsmonitor on `git status`,
 * core.pager, diff.external and diff.<driver>.textconv on `git diff`/`git log -p`, filter.<driver>.clean
 * when git compares the worktree, gpg.program under log.showSignature, post-index-change hooks via
 * core.hooksPath — and `include.path`/`includeIf` pull in further files. Overriding each with `-c`
 * cannot be made complete (driver names come from .gitattributes in any folder), so `low` does not run git.
 */
const READ_ONLY_PROGRAMS: Record<string, ReadOnlyProgram> = {
  ls: ANY,
  cat: ANY,
  head: ANY,
  tail: ANY,
  wc: ANY,
  grep: ANY,
  egrep: ANY,
  fgrep: ANY,
  pwd: ANY,
  echo: ANY,
  which: ANY,
  type: ANY,
  stat: ANY,
  du: ANY,
  df: ANY,
  diff: ANY,
  cmp: ANY,
  cut: ANY,
  tr: ANY,
  jq: ANY,
  basename: ANY,
  dirname: ANY,
  realpath: ANY,
  readlink: ANY,
  uname: ANY,
  whoami: ANY,
  id: ANY,
  true: ANY,
  false: ANY,
  test: ANY,
  '[': ANY,
  printf: { noOptions: true },
  file: {
    short: 'bcdEhiIkLlNnprsv0',
    shortValues: 'eFfmP',
    long: [
      'brief',
      'checking-printout',
      'debug',
      'extension',
      'keep-going',
      'list',
      'dereference',
      'no-dereference',
      'mime',
      'mime-type',
      'mime-encoding',
      'no-buffer',
      'no-pad',
      'print0',
      'preserve-date',
      'raw',
      'special-files',
      'apple',
      'help',
      'version',
    ],
    longValues: ['exclude', 'exclude-quiet', 'files-from', 'separator', 'magic-file', 'parameter'],
  },
  tree: {
    short: 'adlfxpsugDFqNQrtvUcSnCAJXhi',
    shortValues: 'LPIHT',
    long: [
      'noreport',
      'dirsfirst',
      'filesfirst',
      'du',
      'si',
      'prune',
      'gitignore',
      'matchdirs',
      'ignore-case',
      'metafirst',
      'nolinks',
      'inodes',
      'device',
      'help',
      'version',
    ],
    longValues: ['charset', 'filelimit', 'timefmt', 'sort'],
  },
  sort: {
    short: 'bcCdfghiMmnrRsuVz',
    shortValues: 'kStT',
    long: [
      'ignore-leading-blanks',
      'dictionary-order',
      'ignore-case',
      'general-numeric-sort',
      'ignore-nonprinting',
      'month-sort',
      'human-numeric-sort',
      'numeric-sort',
      'random-sort',
      'reverse',
      'version-sort',
      'check',
      'merge',
      'stable',
      'unique',
      'zero-terminated',
      'debug',
      'help',
      'version',
    ],
    longValues: ['sort', 'key', 'field-separator', 'buffer-size', 'temporary-directory', 'parallel', 'batch-size', 'random-source', 'files0-from', 'check'],
  },
  uniq: {
    short: 'cdDiuz',
    shortValues: 'fsw',
    long: ['count', 'repeated', 'all-repeated', 'unique', 'ignore-case', 'zero-terminated', 'group', 'help', 'version'],
    longValues: ['all-repeated', 'group', 'skip-fields', 'skip-chars', 'check-chars'],
    maxOperands: 1,
  },
  rg: {
    short: 'abcFHhIiLlNnoPpqSsUuVvwx0.',
    shortValues: 'ABCdEefgjMmrtT',
    long: [
      'binary',
      'block-buffered',
      'byte-offset',
      'case-sensitive',
      'column',
      'count',
      'count-matches',
      'crlf',
      'debug',
      'files',
      'files-with-matches',
      'files-without-match',
      'fixed-strings',
      'follow',
      'glob-case-insensitive',
      'heading',
      'hidden',
      'ignore-case',
      'ignore-file-case-insensitive',
      'include-zero',
      'invert-match',
      'json',
      'line-buffered',
      'line-number',
      'line-regexp',
      'max-columns-preview',
      'mmap',
      'multiline',
      'multiline-dotall',
      'no-config',
      'no-filename',
      'no-heading',
      'no-ignore',
      'no-ignore-dot',
      'no-ignore-exclude',
      'no-ignore-files',
      'no-ignore-global',
      'no-ignore-parent',
      'no-ignore-vcs',
      'no-line-number',
      'no-messages',
      'no-mmap',
      'no-require-git',
      'no-unicode',
      'null',
      'null-data',
      'one-file-system',
      'only-matching',
      'passthru',
      'pcre2',
      'pretty',
      'quiet',
      'smart-case',
      'stats',
      'text',
      'trim',
      'type-list',
      'unrestricted',
      'vimgrep',
      'with-filename',
      'word-regexp',
      'help',
      'version',
    ],
    longValues: [
      'after-context',
      'before-context',
      'context',
      'color',
      'colors',
      'context-separator',
      'dfa-size-limit',
      'encoding',
      'engine',
      'field-context-separator',
      'field-match-separator',
      'file',
      'glob',
      'iglob',
      'ignore-file',
      'max-columns',
      'max-count',
      'max-depth',
      'max-filesize',
      'path-separator',
      'regexp',
      'replace',
      'sort',
      'sortr',
      'threads',
      'type',
      'type-not',
      'type-add',
      'type-clear',
    ],
  },
  date: {
    short: 'uR',
    shortValues: 'dfr',
    long: ['utc', 'universal', 'rfc-email', 'debug', 'help', 'version', 'iso-8601'],
    longValues: ['date', 'file', 'reference', 'rfc-3339', 'iso-8601'],
    operand: /^\+/,
  },
  find: {
    primaries: new Set([
      '-H',
      '-L',
      '-P',
      '-name',
      '-iname',
      '-path',
      '-ipath',
      '-wholename',
      '-iwholename',
      '-regex',
      '-iregex',
      '-regextype',
      '-type',
      '-xtype',
      '-size',
      '-mtime',
      '-mmin',
      '-atime',
      '-amin',
      '-ctime',
      '-cmin',
      '-newer',
      '-anewer',
      '-cnewer',
      '-user',
      '-group',
      '-uid',
      '-gid',
      '-perm',
      '-links',
      '-inum',
      '-samefile',
      '-lname',
      '-ilname',
      '-maxdepth',
      '-mindepth',
      '-used',
      '-fstype',
      '-empty',
      '-readable',
      '-writable',
      '-executable',
      '-nouser',
      '-nogroup',
      '-true',
      '-false',
      '-depth',
      '-mount',
      '-xdev',
      '-follow',
      '-noleaf',
      '-daystart',
      '-ignore_readdir_race',
      '-noignore_readdir_race',
      '-print',
      '-print0',
      '-printf',
      '-ls',
      '-prune',
      '-quit',
      '-not',
      '-and',
      '-or',
      '-a',
      '-o',
      '!',
      '(',
      ')',
      ',',
    ]),
    primaryValues: new Set([
      '-name',
      '-iname',
      '-path',
      '-ipath',
      '-wholename',
      '-iwholename',
      '-regex',
      '-iregex',
      '-regextype',
      '-type',
      '-xtype',
      '-size',
      '-mtime',
      '-mmin',
      '-atime',
      '-amin',
      '-ctime',
      '-cmin',
      '-newer',
      '-anewer',
      '-cnewer',
      '-user',
      '-group',
      '-uid',
      '-gid',
      '-perm',
      '-links',
      '-inum',
      '-samefile',
      '-lname',
      '-ilname',
      '-maxdepth',
      '-mindepth',
      '-used',
      '-fstype',
      '-printf',
    ]),
  },
  node: VERSION_ONLY('--version', '-v'),
  python3: VERSION_ONLY('--version', '-V'),
  python: VERSION_ONLY('--version', '-V'),
  npm: { exactly: [['--version'], ['-v']], subcommands: { ls: ANY, list: ANY } },
};

/** Constructs `low` refuses wherever they are, and why. */
const LOW_CONSTRUCTS = {
  arithmetic: 'is arithmetic, which bash can make run commands',
  testClause: "is bash's [[ test, which can evaluate arithmetic (use test or [ instead)",
  function: 'defines a function',
  loopVariable: 'sets a variable from words',
  coproc: 'starts a coprocess',
  indirection: CONSTRUCT_RISKS.indirection,
  transformation: CONSTRUCT_RISKS.transformation,
} as const;

/**
 * Commands that cannot be taken back or reach beyond the computer (`medium` refuses these; `high`
 * runs everything the organization allows): publishing, pushing, deploying, deleting recursively,
 * rewriting history, acting as another user, remote shells.
 */
const IRREVERSIBLE_COMMANDS = [
  'git push',
  'git reset --hard',
  'git clean',
  'git filter-branch',
  'rm -r',
  'rm -rf',
  'rm -fr',
  'rm -R',
  'sudo',
  'su',
  'dd',
  'mkfs',
  'shutdown',
  'reboot',
  'chmod -R',
  'chown -R',
  'npm publish',
  'yarn publish',
  'pnpm publish',
  'cargo publish',
  'gem push',
  'twine upload',
  'docker push',
  'kubectl',
  'helm',
  'terraform apply',
  'terraform destroy',
  'ssh',
  'scp',
  'rsync',
  'gh pr merge',
  'gh release',
  'vercel',
  'netlify deploy',
  'fly deploy',
  'firebase deploy',
  'aws',
  'gcloud',
  'az',
];

const RAISE = "; nothing ran. Raise the session's autonomyLevel to allow it.";

/**
 * Why the session's autonomy level does not let the agent make this call on its own (a sentence
 * naming the rule), or null. There is no one to confirm a call mid-turn, so what a level would ask
 * about is refused:
 * - `off`: only tools that read (Read, LS, Glob, Grep, Task);
 * - `low`: also file edits (Create, Edit, ApplyPatch) and read-only commands;
 * - `medium`: also commands that can be undone (builds, tests, installs, local git), not irreversible ones;
 * - `high` (and no level): everything the organization's policy allows.
 */
export function autonomyRefusal(level: unknown, tool: string, input: Record<string, unknown> | null): string | null {
  if (level !== 'off' && level !== 'low' && level !== 'medium') return null;
  if (READING_TOOLS.has(tool)) return null;
  const rule = `Refused by the session's autonomyLevel ${level}`;
  if (EDITING_TOOLS.has(tool)) return level === 'off' ? `${rule}: it allows only tools that read${RAISE}` : null;
  if (tool !== 'Execute') return null;
  if (level === 'off') return `${rule}: it allows only tools that read, not commands${RAISE}`;
  const command = typeof input?.command === 'string' ? input.command : '';
  if (level === 'low') {
    const why = notReadOnly(command);
    return why === null ? null : `${rule}: it runs only commands that read (ls, cat, grep, find ...), and ${why}${RAISE}`;
  }
  const irreversible = checkCommand(command, { commandAllowlist: [], commandDenylist: IRREVERSIBLE_COMMANDS, commandBlocklist: [] });
  return irreversible ? `${rule}: it does not run irreversible commands (${irreversible.replace(/^commandDenylist: /, '')})${RAISE}` : null;
}

/** Why a command line is not read-only (the end of a sentence), or null when every command in it only reads. */
export function notReadOnly(command: string): string | null {
  if (command.trim() === '') return null;
  const analysis = analyzeCommand(command);
  if (analysis.failure !== null) return analysis.failure;
  for (const [construct, why] of Object.entries(LOW_CONSTRUCTS)) {
    const where = analysis.constructs.get(construct as keyof typeof LOW_CONSTRUCTS);
    if (where !== undefined) return `${JSON.stringify(where)} ${why}`;
  }
  const compound = fileWrites(analysis.compoundRedirects)[0];
  if (compound) return `${JSON.stringify(compound.raw)} writes to a file`;
  for (const cmd of analysis.commands) {
    const why = commandNotReadOnly(cmd);
    if (why !== null) return why;
  }
  return null;
}

function commandNotReadOnly(cmd: SimpleCommand): string | null {
  const raw = JSON.stringify(cmd.raw);
  const writes = fileWrites(cmd.redirects);
  if (writes.length > 0) return `${raw} writes to a file (${writes.map((w) => w.raw).join(', ')})`;
  if (cmd.assigns.length > 0) return `${raw} sets variables, which can change what a program runs`;
  const [program, ...args] = cmd.words;
  if (program === undefined) return null;
  if (program.value === null) return `${raw} runs a program named only when it runs`;
  if (program.value === 'git')
    return `${raw} is git, which runs programs named in the repository's own config (core.fsmonitor, core.pager, diff drivers ...) even to read`;
  const spec = program.value.includes('/') ? undefined : READ_ONLY_PROGRAMS[program.value];
  if (spec === undefined) return `${raw} is not one of them`;
  const braces = cmd.words.find((w) => w.braces);
  if (braces) return `${raw} has ${JSON.stringify(braces.raw)}, which bash expands into several words`;
  const evaluated = evaluatedNames(cmd);
  if (evaluated !== null) return `${raw} ${evaluated}, which bash evaluates as arithmetic`;
  const why = argumentsRefusal(spec, args);
  return why === null ? null : `${raw} ${why}`;
}

/** Why these arguments make the program do more than read (the end of a sentence), or null. */
function argumentsRefusal(spec: ReadOnlyProgram, args: ShellWord[]): string | null {
  if (spec.anyArguments) return null;
  const first = args[0]?.value;
  if (spec.subcommands && first != null && spec.subcommands[first]) return argumentsRefusal(spec.subcommands[first], args.slice(1));
  if (spec.exactly) {
    const values = args.map((w) => w.value);
    if (spec.exactly.some((list) => list.length === values.length && list.every((v, i) => v === values[i]))) return null;
    return `is not one of them (only with ${[...spec.exactly.map((l) => l.join(' ')), ...Object.keys(spec.subcommands ?? {}).map((s) => `${s} ...`)].join(', ')})`;
  }
  if (spec.primaries) return findRefusal(spec, args);
  if (spec.noOptions)
    return first === undefined || (first !== null && (!first.startsWith('-') || first === '--'))
      ? null
      : 'starts with an option (printf -v assigns to a variable)';
  const option = (value: string) => `has the option ${JSON.stringify(value)}, which is not known to only read`;
  let operands = 0;
  let onlyOperands = false;
  let valueNext = false;
  for (const word of args) {
    // A word the shell splits or expands to file names can become several words, options among them.
    const expands = word.splits || word.glob;
    if (valueNext) {
      valueNext = false;
      if (expands) return `has ${JSON.stringify(word.raw)}, which the shell can turn into several words, options among them`;
      continue;
    }
    const value = word.value;
    if (!onlyOperands && value === null) return `has ${JSON.stringify(word.raw)}, computed when it runs, which could be an option`;
    if (!onlyOperands && word.glob) return `has ${JSON.stringify(word.raw)}, which the shell expands to file names that could be options`;
    if (onlyOperands || value === null || !value.startsWith('-') || value === '-') {
      operands += 1;
      const checked = spec.maxOperands !== undefined || spec.operand !== undefined;
      if (checked && (value === null || expands)) return `has ${JSON.stringify(word.raw)}, computed when it runs`;
      if (spec.maxOperands !== undefined && operands > spec.maxOperands) return `has more than ${spec.maxOperands} operand (the next one is a file it writes)`;
      if (spec.operand && !spec.operand.test(value!)) return `has the operand ${JSON.stringify(value)}, which is not known to only read`;
      continue;
    }
    if (value === '--') {
      onlyOperands = true;
      continue;
    }
    if (value.startsWith('--')) {
      const name = value.slice(2).split('=')[0];
      if (value.includes('=') ? spec.longValues?.includes(name) : spec.long?.includes(name)) continue;
      if (value.includes('=') || !spec.longValues?.includes(name)) return option(value);
      valueNext = true;
      continue;
    }
    for (let j = 1; j < value.length; j++) {
      if (spec.shortValues?.includes(value[j])) {
        valueNext = j === value.length - 1;
        break;
      }
      if (!spec.short?.includes(value[j])) return option(value);
    }
  }
  return null;
}

/** find's expression: only the primaries known to read; every other word is a path or a primary's value. */
function findRefusal(spec: ReadOnlyProgram, args: ShellWord[]): string | null {
  let valueNext = false;
  for (const word of args) {
    if (word.value === null) return `has ${JSON.stringify(word.raw)}, computed when it runs, which could be a primary such as -exec`;
    if (word.glob) return `has ${JSON.stringify(word.raw)}, which the shell expands to file names that could be primaries (quote it)`;
    if (valueNext || !/^[-!(),]/.test(word.value) || word.value === '-') {
      valueNext = false;
      continue;
    }
    if (!spec.primaries!.has(word.value)) return `has ${JSON.stringify(word.value)}, which is not known to only read`;
    valueNext = spec.primaryValues!.has(word.value);
  }
  return null;
}
