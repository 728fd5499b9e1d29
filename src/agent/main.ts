import { mkdirSync, readFileSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs, ParseArgsConfig } from 'node:util';
import { hasTokenOption, tokenFrom, TokenSourceError } from '../contract/token-source';
import { Agent } from './agent';
import { exec, OUTPUT_FORMATS, OutputFormat } from './headless';
import { ModelApi, modelClient } from './models';
import { PlatformClient } from './platform-client';

const USAGE = `Usage: agent-platform-agent --url <base_url> [--token-file <path>] [--computer <id>] [--workspace <dir>] [--hooks <file>]
       agent-platform-agent exec [--output text|json|stream-json] [--url <base_url> [--token-file <path>] | --settings <file>] [--workspace <dir>] [--hooks <file>] "<task>"
       (or: npm run agent -- <the same options>)

exec runs one task headless and exits: 0 when the model answered, 1 when the run failed or was refused. With --url
(and the agent token) the organization's policy applies and, while its cloudSessionSync is on, the run is recorded as a
session of the computer; without, --settings names a JSON file of agent policy fields laid over the open defaults.
The task may be - to read it from standard input.

The agent token comes from AGENT_TOKEN, or from a file: --token-file <path> or AGENT_TOKEN_FILE (its content, trimmed).
Never from the command line, which every user of the machine can read (ps).

Every other option can come from the environment instead: AGENT_URL, AGENT_COMPUTER_ID, AGENT_WORKSPACE
(default: the current folder), AGENT_HOOKS_FILE (default: ~/.agent-platform/settings.json: the hooks object, or an
object with a "hooks" key and an "instructions" string the model reads at every turn, as it reads the workspace's AGENTS.md).
AGENT_STATE_DIR (default: ~/.agent-platform) holds the transcripts hooks can read. The model: AGENT_MODEL_BASE_URL (an OpenAI-compatible endpoint), AGENT_MODEL (its
model id), AGENT_MODEL_PROVIDER (generic-chat-completion-api, the default, or anthropic: the Messages API, e.g. https://api.anthropic.com), AGENT_MODEL_API_KEY (if it needs one), AGENT_MODEL_MAX_OUTPUT_TOKENS; AGENT_CONTEXT_CHARS (default 400000) is the size of conversation past which it is compacted
into the model's summary. While the organization's controls keep the computer from work, it asks again every
AGENT_WORK_DISABLED_RETRY_MS (default 30000); AGENT_WORKTREE_PRUNE_MS (default 600000) is how often it removes the
git worktrees of deleted sessions (runInWorktree). AGENT_WEB_SEARCH_URL (a SearXNG instance) gives the model a WebSearch
tool; AGENT_WEB_ALLOWED_HOSTS (host or host:port, comma-separated) lets WebFetch reach those hosts on private addresses. Without a model the agent still
takes work and answers each turn with how to configure one. See docs/agents.md.`;

/** How long a stopping agent may take to end its turn before it exits regardless. */
const STOP_GRACE_MS = 15_000;

/** The options both commands take: the server, the token's file, and where the agent works and finds its hooks. */
const SHARED_OPTIONS = {
  url: { type: 'string' },
  'token-file': { type: 'string' },
  workspace: { type: 'string' },
  hooks: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** A bad command line, as both commands report it: the problem, then the usage, on standard error; exit 64 (EX_USAGE). */
function usageError(problem: string): never {
  console.error(`${problem}\n\n${USAGE}`);
  process.exit(64);
}

/** A command's arguments, parsed strictly: an unknown option, or one without its value, is a usage error. */
function commandLine<Config extends ParseArgsConfig>(config: Config): ReturnType<typeof parseArgs<Config>> {
  try {
    return parseArgs(config);
  } catch (error) {
    return usageError((error as Error).message);
  }
}

/** Where the agent works (made if missing), reads its hooks and keeps its state: the options, else the environment, else the defaults. */
function placesOf(values: { workspace?: string; hooks?: string }): { workspace: string; hooksFile: string; stateDir: string } {
  const env = process.env;
  const workspace = resolve(values.workspace ?? env.AGENT_WORKSPACE ?? process.cwd());
  mkdirSync(workspace, { recursive: true });
  return {
    workspace,
    hooksFile: resolve(values.hooks ?? env.AGENT_HOOKS_FILE ?? join(homedir(), '.agent-platform', 'settings.json')),
    stateDir: resolve(env.AGENT_STATE_DIR ?? join(homedir(), '.agent-platform')),
  };
}

/** The agent token: from --token-file or AGENT_TOKEN_FILE, else AGENT_TOKEN (see tokenFrom); a file it cannot use is said alone, exit 64. */
function tokenOf(values: { 'token-file'?: string }): string | undefined {
  try {
    return tokenFrom(values['token-file'] ?? process.env.AGENT_TOKEN_FILE, process.env.AGENT_TOKEN, "the computer's agent token");
  } catch (error) {
    if (!(error instanceof TokenSourceError)) throw error;
    console.error(error.message);
    process.exit(64);
  }
}

function main(): void {
  if (process.argv[2] === 'exec') {
    execMain(process.argv.slice(3));
    return;
  }
  // Before parsing: `--token` with or without its value is refused with the reason, not as an unknown option.
  if (hasTokenOption(process.argv.slice(2))) {
    console.error(
      '--token is not accepted: the command line is visible to every user of the machine (ps). Put the token in AGENT_TOKEN, ' +
        'or in a file only you can read and pass --token-file <path> (or AGENT_TOKEN_FILE).',
    );
    process.exit(64);
  }
  const { values } = commandLine({
    args: process.argv.slice(2),
    options: { ...SHARED_OPTIONS, computer: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const env = process.env;
  const url = values.url ?? env.AGENT_URL;
  const token = tokenOf(values);
  if (!url) usageError('The server URL (--url or AGENT_URL) is required.');
  if (!token) usageError('The agent token (AGENT_TOKEN, --token-file or AGENT_TOKEN_FILE) is required.');
  const { workspace, hooksFile, stateDir } = placesOf(values);
  const log = (line: string) => console.log(`[agent ${new Date().toISOString()}] ${line}`);
  const model = ownModel();
  if (!model) log("no model of its own (AGENT_MODEL_BASE_URL, AGENT_MODEL): it uses the organization's custom models through the server, if any");
  log(`hooks from ${hooksFile} (read at every turn)`);
  const agent = new Agent({
    client: new PlatformClient({ baseUrl: url.replace(/\/+$/, ''), token, log }),
    model,
    relay: { url: url.replace(/\/+$/, ''), token, preferred: env.AGENT_MODEL || undefined },
    workspace,
    hooksFile,
    stateDir,
    contextChars: Number(env.AGENT_CONTEXT_CHARS ?? 0) || undefined,
    computerId: values.computer ?? env.AGENT_COMPUTER_ID,
    workDisabledRetryMs: Number(env.AGENT_WORK_DISABLED_RETRY_MS ?? 0) || undefined,
    worktreePruneMs: Number(env.AGENT_WORKTREE_PRUNE_MS ?? 0) || undefined,
    log,
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping; a turn under way is cut short and ended`);
      agent.stop();
      // Ending the turn takes a few requests and the SessionEnd hooks; a second signal, or this, ends it all.
      setTimeout(() => process.exit(0), STOP_GRACE_MS).unref();
      process.once(signal, () => process.exit(0));
    });
  }
  agent.run(hostname()).then(
    () => process.exit(0),
    (error: Error) => {
      console.error(`The agent stopped: ${error.message}`);
      process.exit(1);
    },
  );
}

/** The agent's own model, from AGENT_MODEL_* (null without one); a bad AGENT_MODEL_PROVIDER exits 64. */
function ownModel(): ModelApi | null {
  const env = process.env;
  const maxOutputTokens = Number(env.AGENT_MODEL_MAX_OUTPUT_TOKENS ?? 0) || undefined;
  const provider = env.AGENT_MODEL_PROVIDER || 'generic-chat-completion-api';
  if (provider !== 'generic-chat-completion-api' && provider !== 'anthropic') {
    usageError(`AGENT_MODEL_PROVIDER must be generic-chat-completion-api (the default) or anthropic, not "${provider}".`);
  }
  return env.AGENT_MODEL_BASE_URL && env.AGENT_MODEL
    ? modelClient(provider, { baseUrl: env.AGENT_MODEL_BASE_URL, model: env.AGENT_MODEL, apiKey: env.AGENT_MODEL_API_KEY || undefined, maxOutputTokens })
    : null;
}

/** `exec "<task>"`: one task, headless (headless.ts); the process exits with the run's code. */
function execMain(argv: string[]): void {
  const { values, positionals } = commandLine({
    args: argv,
    allowPositionals: true,
    options: { ...SHARED_OPTIONS, settings: { type: 'string' }, output: { type: 'string', default: 'text' } },
    strict: true,
  });
  const env = process.env;
  const output = values.output as OutputFormat;
  if (!OUTPUT_FORMATS.includes(output)) usageError(`--output must be one of ${OUTPUT_FORMATS.join(', ')}, not "${values.output}".`);
  if (positionals.length !== 1) usageError('exec takes one task (quote it; - reads it from standard input).');
  const url = values.url ?? env.AGENT_URL;
  const token = url ? tokenOf(values) : undefined;
  if (url && !token) usageError('The agent token (AGENT_TOKEN, --token-file or AGENT_TOKEN_FILE) is required with --url.');
  if (url && values.settings) usageError("--settings is for runs without a server: with --url, the organization's policy applies.");
  const task = positionals[0] === '-' ? readFileSync(0, 'utf8') : positionals[0];
  if (task.trim() === '') {
    console.error('The task is empty.');
    process.exit(64);
  }
  const { workspace, hooksFile, stateDir } = placesOf(values);
  // Progress on standard error, the run on standard output: a script reads one without the other.
  const log = (line: string) => process.stderr.write(`[agent ${new Date().toISOString()}] ${line}\n`);
  exec({
    task,
    output,
    server: url && token ? { url: url.replace(/\/+$/, ''), token, preferredModel: env.AGENT_MODEL || undefined } : undefined,
    settingsFile: values.settings,
    model: ownModel(),
    workspace,
    hooksFile,
    stateDir,
    contextChars: Number(env.AGENT_CONTEXT_CHARS ?? 0) || undefined,
    log,
    write: (text) => process.stdout.write(text),
  }).then(
    (code) => process.exit(code),
    (error: Error) => {
      console.error(`The run failed: ${error.message}`);
      process.exit(1);
    },
  );
}

main();
