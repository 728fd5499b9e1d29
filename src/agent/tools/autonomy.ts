import { checkCommand } from './command-policy';

/** The session's `autonomyLevel`: how much the agent does without a person confirming it. */
export type AutonomyLevel = 'off' | 'low' | 'medium' | 'high';

/** Tools that change nothing: every level allows them. */
const READING_TOOLS = new Set(['Read', 'LS', 'Glob', 'Grep', 'Task']);
const EDITING_TOOLS = new Set(['Create', 'Edit', 'ApplyPatch']);

/**
 * Commands that only read (`low` runs these and nothing else): as allowlist patterns, every simple
 * command of a command line must match one, and nothing may be written to a file by redirection.
 */
const READ_ONLY_COMMANDS = [
  'ls', 'cat', 'head', 'tail', 'wc', 'grep', 'egrep', 'fgrep', 'rg', 'find', 'pwd', 'echo', 'printf', 'which', 'type', 'file', 'stat',
  'tree', 'du', 'df', 'diff', 'cmp', 'sort', 'uniq', 'cut', 'tr', 'jq', 'basename', 'dirname', 'realpath', 'readlink', 'date', 'uname',
  'whoami', 'id', 'true', 'false', 'test', 'git status', 'git diff', 'git log', 'git show', 'git blame', 'git grep', 'git ls-files',
  'git rev-parse', 'git describe', 'git shortlog', 'git remote -v', 'git branch --list', 'git branch -a', 'git branch -r', 'git branch -v',
  'git config --get', 'git config --list', 'node --version', 'npm --version', 'npm ls', 'npm view', 'python3 --version', 'python --version',
];
/** `find` options that act rather than list. */
const ACTING_FIND = /(^|\s)-(delete|exec|execdir|ok|okdir|fprint|fprint0|fprintf|fls)(\s|$)/;

/**
 * Commands that cannot be taken back or reach beyond the computer (`medium` refuses these; `high`
 * runs everything the organization allows): publishing, pushing, deploying, deleting recursively,
 * rewriting history, acting as another user, remote shells.
 */
const IRREVERSIBLE_COMMANDS = [
  'git push', 'git reset --hard', 'git clean', 'git filter-branch', 'rm -r', 'rm -rf', 'rm -fr', 'rm -R', 'sudo', 'su', 'dd', 'mkfs',
  'shutdown', 'reboot', 'chmod -R', 'chown -R', 'npm publish', 'yarn publish', 'pnpm publish', 'cargo publish', 'gem push', 'twine upload',
  'docker push', 'kubectl', 'helm', 'terraform apply', 'terraform destroy', 'ssh', 'scp', 'rsync', 'gh pr merge', 'gh release', 'vercel',
  'netlify deploy', 'fly deploy', 'firebase deploy', 'aws', 'gcloud', 'az',
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
    const notReadOnly =
      checkCommand(command, { commandAllowlist: READ_ONLY_COMMANDS, commandDenylist: [], commandBlocklist: [] }) !== null ||
      writesByRedirection(command) ||
      ACTING_FIND.test(command);
    return notReadOnly ? `${rule}: it runs only commands that read (ls, cat, grep, git status, git diff ...)${RAISE}` : null;
  }
  const irreversible = checkCommand(command, { commandAllowlist: [], commandDenylist: IRREVERSIBLE_COMMANDS, commandBlocklist: [] });
  return irreversible ? `${rule}: it does not run irreversible commands (${irreversible.replace(/^commandDenylist: /, '')})${RAISE}` : null;
}

/** Whether the command writes a file through `>` or `>>` (to anything but /dev/null, or another descriptor). */
function writesByRedirection(command: string): boolean {
  const unquoted = command.replace(/'[^']*'|"(\\.|[^"\\])*"/g, '');
  return /&?>>?(?!&)/.test(unquoted.replace(/(\d*|&)>>?\s*\/dev\/null\b/g, '').replace(/\d*>&\d+/g, ''));
}
