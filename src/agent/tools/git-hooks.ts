import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The trailer the agent's commits carry while the organization's `includeCoAuthoredByAgent` is on. */
export const CO_AUTHOR_TRAILER = 'Co-authored-by: Agent Platform <agent@agent-platform.invalid>';

/** Every hook git runs from a hooks folder (githooks(5)), so that pointing git at ours loses none of the repository's. */
const HOOK_NAMES = [
  'applypatch-msg',
  'pre-applypatch',
  'post-applypatch',
  'pre-commit',
  'pre-merge-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-rebase',
  'post-checkout',
  'post-merge',
  'pre-push',
  'pre-receive',
  'update',
  'proc-receive',
  'post-receive',
  'post-update',
  'reference-transaction',
  'push-to-checkout',
  'pre-auto-gc',
  'post-rewrite',
  'sendemail-validate',
  'post-index-change',
];

/**
 * Each hook runs the repository's own (its `core.hooksPath`, else `.git/hooks`: asked of git with our
 * override switched off) with the same arguments and input. `prepare-commit-msg`, which git runs even
 * for `--no-verify`, first has Agent Shield scan what the commit adds when `AGENT_PLATFORM_SHIELD` is
 * `on` (a finding, or a scanner that cannot run, aborts the commit); then adds the co-author trailer
 * when `AGENT_PLATFORM_CO_AUTHOR` is `on`, and takes it out otherwise (the model may have written it).
 */
const HOOK_SCRIPT = `#!/bin/sh
name=$(basename "$0")
own=$(GIT_CONFIG_COUNT=0 git rev-parse --git-path hooks 2>/dev/null)/$name
if [ "$name" != prepare-commit-msg ]; then
  if [ -x "$own" ]; then exec "$own" "$@"; fi
  exit 0
fi
if [ "$AGENT_PLATFORM_SHIELD" = on ]; then
  "$AGENT_PLATFORM_NODE" "$AGENT_PLATFORM_SHIELD_CLI" || exit 1
fi
if [ -x "$own" ]; then "$own" "$@" || exit $?; fi
trailer='${CO_AUTHOR_TRAILER}'
grep -v -x -F "$trailer" "$1" > "$1.agent-platform" || true
cat "$1.agent-platform" > "$1" && rm -f "$1.agent-platform"
if [ "$AGENT_PLATFORM_CO_AUTHOR" = on ]; then
  git interpret-trailers --in-place --if-exists addIfDifferent --trailer "$trailer" "$1" || exit $?
fi
exit 0
`;

let hooksFolder: string | undefined;

/** The agent's hooks folder, written once per process where the commands it runs can read it. */
function ourHooks(): string {
  if (hooksFolder) return hooksFolder;
  const folder = mkdtempSync(join(tmpdir(), 'agent-platform-git-hooks-'));
  for (const name of HOOK_NAMES) {
    writeFileSync(join(folder, name), HOOK_SCRIPT);
    chmodSync(join(folder, name), 0o755);
  }
  return (hooksFolder = folder);
}

/** The shield's command line as built (dist/agent/shield/shield-cli.js), also when this module runs from the sources. */
function shieldCli(): string {
  const beside = resolve(__dirname, '..', 'shield', 'shield-cli.js');
  return existsSync(beside) ? beside : resolve(__dirname, '..', '..', '..', 'dist', 'agent', 'shield', 'shield-cli.js');
}

/**
 * The environment that makes the git commands of one command line use the agent's hooks (through git's
 * `GIT_CONFIG_COUNT` settings, after any the environment has already): their commits carry the co-author
 * trailer exactly when `includeCoAuthoredByAgent` is on, and Agent Shield checks them while `enableAgentShield` is.
 */
export function gitEnvironment(base: NodeJS.ProcessEnv, settings: { includeCoAuthoredByAgent: boolean; enableAgentShield: boolean }): Record<string, string> {
  const index = Number(base.GIT_CONFIG_COUNT ?? 0) || 0;
  return {
    GIT_CONFIG_COUNT: String(index + 1),
    [`GIT_CONFIG_KEY_${index}`]: 'core.hooksPath',
    [`GIT_CONFIG_VALUE_${index}`]: ourHooks(),
    AGENT_PLATFORM_CO_AUTHOR: settings.includeCoAuthoredByAgent ? 'on' : 'off',
    AGENT_PLATFORM_SHIELD: settings.enableAgentShield ? 'on' : 'off',
    AGENT_PLATFORM_NODE: process.execPath,
    AGENT_PLATFORM_SHIELD_CLI: shieldCli(),
  };
}
