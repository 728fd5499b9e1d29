import { mkdirSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent } from './agent';
import { modelClient } from './models';
import { PlatformClient } from './platform-client';

const USAGE = `Usage: npm run agent -- --url <base_url> --token <computer agent token> [--computer <id>] [--workspace <dir>] [--hooks <file>]

Every option can come from the environment instead: AGENT_URL, AGENT_TOKEN, AGENT_COMPUTER_ID, AGENT_WORKSPACE
(default: the current folder), AGENT_HOOKS_FILE (default: ~/.agent-platform/settings.json; the hooks object, or an
object with a "hooks" key). AGENT_STATE_DIR (default: ~/.agent-platform) holds the transcripts hooks can read. The model: AGENT_MODEL_BASE_URL (an OpenAI-compatible endpoint), AGENT_MODEL (its
model id), AGENT_MODEL_PROVIDER (generic-chat-completion-api, the default, or anthropic: the Messages API, e.g. https://api.anthropic.com), AGENT_MODEL_API_KEY (if it needs one), AGENT_MODEL_MAX_OUTPUT_TOKENS; AGENT_CONTEXT_CHARS (default 400000) is the size of conversation past which it is compacted
into the model's summary. Without a model the agent still
takes work and answers each turn with how to configure one.`;

/** How long a stopping agent may take to end its turn before it exits regardless. */
const STOP_GRACE_MS = 15_000;

function main(): void {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        url: { type: 'string' },
        token: { type: 'string' },
        computer: { type: 'string' },
        workspace: { type: 'string' },
        hooks: { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
    }));
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    process.exit(64);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const env = process.env;
  const url = values.url ?? env.AGENT_URL;
  const token = values.token ?? env.AGENT_TOKEN;
  if (!url || !token) {
    console.error(`${!url ? 'The server URL (--url or AGENT_URL)' : 'The agent token (--token or AGENT_TOKEN)'} is required.\n\n${USAGE}`);
    process.exit(64);
  }
  const workspace = resolve(values.workspace ?? env.AGENT_WORKSPACE ?? process.cwd());
  mkdirSync(workspace, { recursive: true });
  const log = (line: string) => console.log(`[agent ${new Date().toISOString()}] ${line}`);
  const maxOutputTokens = Number(env.AGENT_MODEL_MAX_OUTPUT_TOKENS ?? 0) || undefined;
  const provider = env.AGENT_MODEL_PROVIDER === 'anthropic' ? 'anthropic' : 'generic-chat-completion-api';
  const model =
    env.AGENT_MODEL_BASE_URL && env.AGENT_MODEL
      ? modelClient(provider, { baseUrl: env.AGENT_MODEL_BASE_URL, model: env.AGENT_MODEL, apiKey: env.AGENT_MODEL_API_KEY || undefined, maxOutputTokens })
      : null;
  if (!model) log("no model of its own (AGENT_MODEL_BASE_URL, AGENT_MODEL): it uses the organization's custom models through the server, if any");
  const stateDir = resolve(env.AGENT_STATE_DIR ?? join(homedir(), '.agent-platform'));
  const hooksFile = resolve(values.hooks ?? env.AGENT_HOOKS_FILE ?? join(homedir(), '.agent-platform', 'settings.json'));
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

main();
