import { setTimeout as sleep } from 'node:timers/promises';
import { ChatMessage, ModelClient, ModelError, ToolCall, ToolSpec } from './model-client';
import { AgentPolicy, ChannelMessage, ChannelRefusal, PlatformClient, Work } from './platform-client';
import { AgentTool, toolNamed, ToolResult, WORKSPACE_TOOLS } from './tools';

/** Model calls one turn may make before it is ended (a loop that never stops is a bug, not work). */
export const MAX_STEPS_PER_TURN = 50;
const CLAIM_WAIT_MS = 25_000;
const HEARTBEAT_MS = 30_000;

export interface AgentOptions {
  client: PlatformClient;
  /** Null when no model is configured: every turn then ends with a message saying how to configure one. */
  model: ModelClient | null;
  workspace: string;
  computerId?: string;
  log: (line: string) => void;
}

const NO_MODEL =
  'No model is configured for this agent, so it cannot work on this message. Start the agent with AGENT_MODEL_BASE_URL ' +
  '(an OpenAI-compatible endpoint, e.g. https://api.example.com/v1), AGENT_MODEL (the model id) and, if the endpoint needs one, ' +
  'AGENT_MODEL_API_KEY; see the README, "Running an agent".';

/**
 * The reference agent: takes work from the agent channel, runs the model with the workspace tools
 * until it answers without tool calls, and writes every step back as messages. Conversations are
 * kept in memory per session; the user messages of each turn come with the work.
 */
export class Agent {
  private readonly histories = new Map<string, ChatMessage[]>();
  private stopping = false;
  private current: AbortController | null = null;

  constructor(private readonly options: AgentOptions) {}

  /** Takes and does work until `stop()`; network trouble and server restarts only pause it. */
  async run(hostname: string): Promise<void> {
    const { client, log } = this.options;
    await this.untilDone(() => client.connect(hostname), 'connect');
    log(`connected as ${hostname}; workspace ${this.options.workspace}`);
    while (!this.stopping) {
      let work: Work | null = null;
      try {
        work = await client.claim(CLAIM_WAIT_MS);
      } catch (error) {
        log(`could not take work: ${(error as Error).message}`);
        await sleep(2_000);
        continue;
      }
      if (work) await this.turn(work);
    }
  }

  stop(): void {
    this.stopping = true;
    this.current?.abort();
  }

  /** One turn: the model and its tools until an answer without tool calls, then the end of the turn. */
  async turn(work: Work): Promise<void> {
    const { client, log } = this.options;
    const started = Date.now();
    const abort = (this.current = new AbortController());
    const history = this.histories.get(work.sessionId) ?? [];
    for (const message of work.messages) history.push({ role: 'user', content: userText(message) });
    const heartbeat = setInterval(() => void client.heartbeat(work.sessionId, work.turnId).catch(() => undefined), HEARTBEAT_MS);
    try {
      const refusal = await this.refusal();
      if (refusal) {
        await this.say(work, refusal);
      } else {
        await this.work(work, history, abort.signal);
      }
      await client.endTurn(work.sessionId, work.turnId, Date.now() - started);
      log(`session ${work.sessionId}: turn done in ${Date.now() - started} ms`);
    } catch (error) {
      if (error instanceof ChannelRefusal && error.code === 'turn_not_active') {
        log(`session ${work.sessionId}: the turn was taken back (its lease ran out); leaving it`);
      } else {
        log(`session ${work.sessionId}: turn failed: ${(error as Error).message}`);
      }
    } finally {
      clearInterval(heartbeat);
      this.histories.set(work.sessionId, history);
      this.current = null;
    }
  }

  private async work(work: Work, history: ChatMessage[], signal: AbortSignal): Promise<void> {
    const { client } = this.options;
    const model = this.options.model!;
    const policy = await client.policy();
    const tools = WORKSPACE_TOOLS;
    const specs: ToolSpec[] = tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } }));
    for (let step = 0; step < MAX_STEPS_PER_TURN; step++) {
      if (signal.aborted) return;
      let answer;
      try {
        answer = await model.complete([{ role: 'system', content: systemPrompt(this.options.workspace) }, ...history], specs, signal);
      } catch (error) {
        if (error instanceof ModelError) return this.say(work, `The model failed: ${error.message}`);
        throw error;
      }
      await client.usage(work.sessionId, { turnId: work.turnId, model: model.config.model, ...answer.usage });
      history.push({ role: 'assistant', content: answer.text || null, ...(answer.toolCalls.length ? { tool_calls: answer.toolCalls } : {}) });
      await client.append(work.sessionId, work.turnId, [assistantMessage(model.config.model, answer.text, answer.toolCalls, answer.reasoning)]);
      if (answer.toolCalls.length === 0) return;
      const results: Array<{ call: ToolCall; result: ToolResult }> = [];
      for (const call of answer.toolCalls) {
        const result = await runTool(toolNamed(call.function.name), call, { workspace: this.options.workspace, policy, signal });
        results.push({ call, result });
        history.push({ role: 'tool', tool_call_id: call.id, content: result.content });
      }
      await client.append(work.sessionId, work.turnId, [
        { role: 'tool', content: results.map(({ call, result }) => ({ type: 'tool_result', toolUseId: call.id, content: result.content || '(no output)', isError: result.isError })) },
      ]);
    }
    await this.say(work, `Stopped after ${MAX_STEPS_PER_TURN} model calls in one turn; send a message to continue.`);
  }

  /** Why this agent cannot work now (no model, or a model the organization's policy blocks), or null. */
  private async refusal(): Promise<string | null> {
    const model = this.options.model;
    if (!model) return NO_MODEL;
    const { modelPolicy } = await this.options.client.policy();
    const id = model.config.model;
    if (modelPolicy.blockedModelIds.includes(id)) return `The organization's modelPolicy blocks the model ${id}; configure another one.`;
    if (modelPolicy.allowedModelIds.length > 0 && !modelPolicy.allowedModelIds.includes(id)) {
      return `The organization's modelPolicy allows only ${modelPolicy.allowedModelIds.join(', ')}; this agent is configured with ${id}.`;
    }
    return null;
  }

  private async say(work: Work, text: string): Promise<void> {
    await this.options.client.append(work.sessionId, work.turnId, [{ role: 'system', content: [{ type: 'text', text }] }]);
  }

  private async untilDone(action: () => Promise<unknown>, what: string): Promise<void> {
    for (let attempt = 1; !this.stopping; attempt++) {
      try {
        await action();
        return;
      } catch (error) {
        if (error instanceof ChannelRefusal) throw error;
        this.options.log(`${what} failed (${(error as Error).message}); retrying`);
        await sleep(Math.min(10_000, 500 * attempt));
      }
    }
  }
}

async function runTool(tool: AgentTool | undefined, call: ToolCall, context: Parameters<AgentTool['run']>[1]): Promise<ToolResult> {
  if (!tool) return { isError: true, content: `There is no tool named ${call.function.name}; the tools are ${WORKSPACE_TOOLS.map((t) => t.name).join(', ')}.` };
  let input: unknown;
  try {
    input = JSON.parse(call.function.arguments || '{}');
  } catch {
    return { isError: true, content: `The arguments of ${call.function.name} are not valid JSON.` };
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return { isError: true, content: `The arguments of ${call.function.name} must be a JSON object.` };
  return tool.run(input as Record<string, unknown>, context);
}

/** What the model reads of a user message: its text, and a line for each attachment it cannot see. */
function userText(message: ChannelMessage): string {
  return message.content
    .map((block) => {
      if (block.type === 'text') return String(block.text);
      if (block.type === 'image') return '[an image is attached; this agent cannot see images]';
      if (block.type === 'document') {
        const source = block.source as { type?: string; data?: string; name?: string };
        return source.type === 'text' ? `[attached file ${source.name ?? ''}]\n${source.data ?? ''}` : `[a PDF is attached${source.name ? `: ${source.name}` : ''}; this agent cannot read PDFs]`;
      }
      return '';
    })
    .filter(Boolean)
    .join('\n\n');
}

function assistantMessage(model: string, text: string, calls: ToolCall[], reasoning?: { field: string; content: string }): ChannelMessage {
  const content: ChannelMessage['content'] = [];
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning.content, signature: '', signatureProvider: 'generic-chat-completion-api' });
  if (text) content.push({ type: 'text', text });
  for (const call of calls) {
    let input: unknown = {};
    try {
      input = JSON.parse(call.function.arguments || '{}');
    } catch {
      input = { arguments: call.function.arguments };
    }
    content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: typeof input === 'object' && input !== null && !Array.isArray(input) ? input : { value: input } });
  }
  if (content.length === 0) content.push({ type: 'text', text: '(no answer)' });
  return {
    role: 'assistant',
    content,
    modelId: model,
    ...(reasoning ? { chatCompletionReasoningField: reasoning.field, chatCompletionReasoningContent: reasoning.content } : {}),
  };
}

function systemPrompt(workspace: string): string {
  return (
    `You are a coding agent working in the folder ${workspace}. Use the tools to read, search, create and edit files and to run commands ` +
    'there. Commands and files outside the workspace, and commands the organization forbids, are refused. When the task is done, ' +
    'answer with a short summary of what you did, without tool calls.'
  );
}

export type { AgentPolicy };
