import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The only variables of the server's environment that reach what runs for a computer: how to
 * find programs, speak the locale and reach the network. Never the server's own settings
 * (DATABASE_URL, SECRETS_KEY, JWT_SECRET) nor anything else it happens to hold.
 */
const PASSED = /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|(HTTPS?|NO|ALL)_PROXY|(https?|no|all)_proxy)$/;

/** The home of a computer's processes: inside its workspace, so no one else's configuration is read. */
export const COMPUTER_HOME = '.home';

/**
 * Settings a repository's own configuration (`.npmrc`, `.yarnrc.yml`, git config) must not
 * choose, because they name programs to run: pinned here, where they win over the repository's.
 */
function pinnedSettings(home: string): Record<string, string> {
  return {
    // npm, pnpm and Yarn 1: the git binary for git dependencies, and the shell for scripts.
    npm_config_git: gitPath,
    npm_config_script_shell: '/bin/sh',
    npm_config_shell: '/bin/sh',
    npm_config_userconfig: join(home, '.npmrc'),
    npm_config_update_notifier: 'false',
    // Yarn 2+: `yarnPath` in the repository's .yarnrc.yml would run its own "yarn".
    YARN_IGNORE_PATH: '1',
    // git: neither the host's nor a user's configuration (core.sshCommand, core.fsmonitor, ...).
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
  };
}

/** The environment of a command run for a computer whose home is `home`, with `extra` on top. */
export function computerEnvironment(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const passed = Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && PASSED.test(entry[0]));
  return { ...Object.fromEntries(passed), HOME: home, TMPDIR: join(home, 'tmp'), ...pinnedSettings(home), ...extra };
}

/** git's absolute path, found once on the server's PATH (a bare name would be looked up in the repository first by some tools). */
const gitPath = findOnPath('git') ?? '/usr/bin/git';

/** A program's absolute path on the server's PATH, if it is installed. */
export function findOnPath(program: string): string | undefined {
  for (const directory of (process.env.PATH ?? '').split(delimiter)) {
    if (!directory.startsWith('/')) continue;
    const candidate = join(directory, program);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}
