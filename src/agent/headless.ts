import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { AgentMessage, AgentPolicy, Message, Work } from '../contract/agent-channel';
import { defaultAgentPolicy } from '../contract/default-policy';
import { Agent, AgentOptions } from './agent';
import { AgentChannel, ChannelRefusal, PlatformClient } from './platform-client';

/** How `exec` prints the run: readable text, one JSON document at the end, or one JSON event a line as it goes. */
export const OUTPUT_FORMATS = ['text', 'json', 'stream-json'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export interface ExecOptions extends Omit<AgentOptions, 'client' | 'relay'> {
  task: string;
  output: OutputFormat;
  /** The platform, when the run is connected to one: its policy applies, and the run is recorded there while `cloudSessionSync` is on. */
  server?: { url: string; token: string; preferredModel?: string };
  /** Without a server: a JSON file of agent policy fields laid over the open defaults. */
  settingsFile?: string;
  write: (text: string) => void;
}

/** What a run came to, as `--output json` prints it and the last `stream-json` event says. */
export interface ExecResult {
  type: 'result';
  /** The session the run is recorded as, or null when it is not. */
  sessionId: string | null;
  isError: boolean;
  /** The model's last answer, or what ended the run. */
  result: string;
  inputTokens: number;
  outputTokens: number;
}

/**
 * One task, headless (`agent-platform-agent exec "task"`): the agent's tools, policy and sandbox, without a
 * person. Connected to a server, the organization's policy applies and, while its `cloudSessionSync` is on, the
 * run is a session there (started with the task, its turn claimed by this process alone); with it off, or with no
 * server, the run stays on this computer. Nothing waits for approval: a call that would is refused, as in an
 * unattended session. Exit code 0 when the model answered, 1 when the run failed or was refused.
 */
export async function exec(options: ExecOptions): Promise<number> {
  const report = new RunReport(options.output, options.write);
  const client = options.server ? new PlatformClient({ baseUrl: options.server.url, token: options.server.token, log: options.log }) : null;
  let sessionId: string | null = null;
  let work: Work | null = null;
  let channel: AgentChannel;
  if (client) {
    const recorded = await client.startSession({ text: options.task, sessionSettings: { autonomyMode: 'unattended' } }).catch((error: unknown) => {
      if (error instanceof ChannelRefusal && error.code === 'cloud_session_sync_off') return null;
      throw error;
    });
    if (recorded) {
      // Started with its turn taken by this process: no other agent of the computer can take the run.
      sessionId = recorded.session.sessionId;
      work = recorded.work;
      channel = client;
    } else {
      options.log('cloudSessionSync is off: this run stays on this computer, under the organization policy');
      channel = new LocalChannel(await client.policy(), client);
    }
  } else {
    channel = new LocalChannel(await localPolicy(options.settingsFile), null);
  }
  work ??= localWork(options.task);
  const agent = new Agent({
    ...options,
    client: reporting(channel, report),
    relay: options.server ? { url: options.server.url, token: options.server.token, preferred: options.server.preferredModel } : undefined,
  });
  await agent.turn(work);
  const result = report.result(sessionId);
  if (options.output === 'text') options.write(`${result.isError ? 'Failed' : 'Done'}${sessionId ? ` (session ${sessionId})` : ''}.\n`);
  else options.write(`${JSON.stringify(result, null, options.output === 'json' ? 2 : undefined)}\n`);
  return result.isError ? 1 : 0;
}

/** What the run writes, as it goes: printed in the chosen format, and summed up at the end. */
class RunReport {
  private readonly messages: AgentMessage[] = [];
  private inputTokens = 0;
  private outputTokens = 0;

  constructor(
    private readonly output: OutputFormat,
    private readonly write: (text: string) => void,
  ) {}

  appended(messages: AgentMessage[]): void {
    for (const message of messages) {
      this.messages.push(message);
      if (this.output === 'stream-json') this.write(`${JSON.stringify({ type: 'message', message })}\n`);
      else if (this.output === 'text' && !message.hiddenFromUserViews) this.write(textOf(message));
    }
  }

  used(usage: { inputTokens?: number; outputTokens?: number }): void {
    this.inputTokens += usage.inputTokens ?? 0;
    this.outputTokens += usage.outputTokens ?? 0;
  }

  result(sessionId: string | null): ExecResult {
    const shown = this.messages.filter((message) => !message.hiddenFromUserViews);
    const last = shown.at(-1);
    // The agent says in a system message why a turn could not be done (a refusal, a failed model, a stop).
    const failed = !last || last.role !== 'assistant' || shown.some((message) => message.role === 'system');
    const text = (message: AgentMessage | undefined) =>
      (message?.content ?? []).flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n') || '(nothing)';
    return {
      type: 'result',
      sessionId,
      isError: failed,
      result: failed ? text(shown.findLast((message) => message.role === 'system') ?? last) : text(last),
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
    };
  }
}

function textOf(message: AgentMessage): string {
  const lines: string[] = [];
  for (const block of message.content) {
    if (block.type === 'text') lines.push(message.role === 'system' ? `! ${block.text}` : block.text);
    else if (block.type === 'tool_use') lines.push(`→ ${block.name} ${JSON.stringify(block.input)}`);
    else if (block.type === 'tool_result') lines.push(`${block.isError ? '✗' : '✓'} ${String(block.content).split('\n')[0].slice(0, 200)}`);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** The channel, with what the agent writes passed on to the report (every other call goes to the channel as it is). */
function reporting(channel: AgentChannel, report: RunReport): AgentChannel {
  const append: AgentChannel['append'] = async (...args) => {
    const answer = await channel.append(...args);
    report.appended(args[2]);
    return answer;
  };
  const usage: AgentChannel['usage'] = (...args) => {
    report.used(args[1]);
    return channel.usage(...args);
  };
  return new Proxy(channel, {
    get(target, property, receiver) {
      if (property === 'append') return append;
      if (property === 'usage') return usage;
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The agent channel of a run that is not recorded: the policy given (the server's, or a local one), and the
 * conversation kept in this process. Custom models with cloud credentials still ask the server for their commands.
 */
class LocalChannel implements AgentChannel {
  private seq = 0;

  constructor(
    private readonly localPolicy: AgentPolicy,
    private readonly server: PlatformClient | null,
  ) {}

  connect(): ReturnType<AgentChannel['connect']> {
    throw new Error('a local run does not connect');
  }
  claim(): ReturnType<AgentChannel['claim']> {
    return Promise.resolve(null);
  }
  async policy(): Promise<AgentPolicy> {
    return this.localPolicy;
  }
  cloudModelAccess(customModelId: string): ReturnType<AgentChannel['cloudModelAccess']> {
    if (!this.server) throw new Error(`custom model ${customModelId} needs the server for its cloud credentials`);
    return this.server.cloudModelAccess(customModelId);
  }
  async existingSessions(): Promise<string[]> {
    return [];
  }
  async conversation(): ReturnType<AgentChannel['conversation']> {
    return { messages: [], nextCursor: null };
  }
  async append(sessionId: string, _turnId: string, messages: AgentMessage[]): ReturnType<AgentChannel['append']> {
    return { messages: messages.map((message) => stored(sessionId, message, ++this.seq)) } as Awaited<ReturnType<AgentChannel['append']>>;
  }
  async usage(): ReturnType<AgentChannel['usage']> {
    return {} as Awaited<ReturnType<AgentChannel['usage']>>;
  }
  async heartbeat(): ReturnType<AgentChannel['heartbeat']> {
    return { interrupted: false } as Awaited<ReturnType<AgentChannel['heartbeat']>>;
  }
  async delta(): Promise<void> {}
  requestApproval(): ReturnType<AgentChannel['requestApproval']> {
    throw new Error('a headless run asks no one for approval');
  }
  awaitApproval(): ReturnType<AgentChannel['awaitApproval']> {
    throw new Error('a headless run asks no one for approval');
  }
  async endTurn(): ReturnType<AgentChannel['endTurn']> {
    return {} as Awaited<ReturnType<AgentChannel['endTurn']>>;
  }
}

function stored(sessionId: string, message: AgentMessage | Pick<Message, 'role' | 'content'>, seq: number): Message {
  const now = new Date().toISOString();
  return { ...message, id: randomUUID(), sessionId, seq, createdAt: now, updatedAt: now } as unknown as Message;
}

/** A turn of a session that lives only in this process: the task as its one message. */
function localWork(task: string): Work {
  const sessionId = randomUUID();
  const now = new Date().toISOString();
  return {
    turnId: randomUUID(),
    sessionId,
    leaseExpiresAt: Date.now() + 3_600_000,
    session: { sessionId, title: null, status: 'running', createdAt: now, updatedAt: now, sessionSettings: { autonomyMode: 'unattended' } },
    messages: [stored(sessionId, { role: 'user', content: [{ type: 'text', text: task }] }, 0)],
    messagesCursor: null,
  } as unknown as Work;
}

/** The open defaults of the agent policy (the server's, src/contract), with a settings file's fields laid over them. */
async function localPolicy(file: string | undefined): Promise<AgentPolicy> {
  const defaults = defaultAgentPolicy();
  if (!file) return defaults;
  let overlay: unknown;
  try {
    overlay = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new Error(`the settings file ${file} cannot be read as JSON: ${(error as Error).message}`);
  }
  if (typeof overlay !== 'object' || overlay === null || Array.isArray(overlay)) throw new Error(`the settings file ${file} must hold a JSON object`);
  return { ...defaults, ...(overlay as Partial<AgentPolicy>) };
}
