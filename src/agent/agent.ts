import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HookEvent, HooksConfig, HooksConfigError, loadHooks } from './hooks/hooks-config';
import { HookRun, runHooks, selectCommands } from './hooks/hook-runner';
import type { AgentMessage, AgentPolicy, ContentBlock, Message, SessionSettings, UsageReport, Work } from '../contract/agent-channel';
import { modelRefusal } from '../contract/model-policy';
import { ChatDocument, ChatMessage, ModelAnswer, ModelApi, modelClient, ModelError, ToolCall, ToolSpec } from './models';
import { PdfTexts } from './documents';
import { DeltaPublisher } from './delta-publisher';
import { loadMemory, Memory, NestedInstructions, withMemory } from './memory';
import { AgentChannel, ChannelRefusal, DeltaRefused } from './platform-client';
import { AllowedIps } from './sandbox/network-policy';
import { AgentTool, toolNamed, ToolResult, WORKSPACE_TOOLS } from './tools';
import { ApprovalRules, approvalNeeded, callSummary } from './tools/approval';
import { autonomyRefusal } from './tools/autonomy';
import { ToolSelection } from './tools/tool-selection';
import { Worktrees } from './worktrees';
import { parseChoice, ROUTER_MODEL_ID, routerCandidates, routingPrompt } from './router';
import { ShieldedOutput } from './shield/live-output';
import { redactSecrets } from './shield/secrets';
import { McpConnections, McpPrompt } from './mcp/mcp-connections';
import { mcpExtraTools } from './mcp/mcp-extras';
import { CloudCredentials } from './models/cloud-credentials';
import { expandCommand, Extensions, LoadedPlugins, NO_PLUGINS, PluginSkill, Plugins, SubagentDefinition, turnExtensions } from './plugins/plugins';
import { CatalogReports } from './plugins/catalog-reports';
import { skillTool } from './tools/skill';
import { planTool } from './tools/plan';
import { webFetchTool, webSearchTool, webSettings } from './tools/web';
import { mcpAutonomyRefusal, McpTool } from './mcp/mcp-tools';

/** Model calls one turn may make before it is ended (a loop that never stops is a bug, not work). */
export const MAX_STEPS_PER_TURN = 50;
/** Model calls one subagent may make. */
export const SUBAGENT_MAX_STEPS = 30;
/** Characters of conversation past which it is compacted into a summary (about 100,000 tokens). */
export const DEFAULT_CONTEXT_CHARS = 400_000;
const CLAIM_WAIT_MS = 25_000;
/** After a claim answered empty well before its wait: how long before the next. */
const EARLY_EMPTY_CLAIM_PAUSE_MS = 1_000;
/** How often the agent looks for git worktrees of sessions that are gone, by default. */
const WORKTREE_PRUNE_MS = 10 * 60_000;
/** How often an agent whose computer the organization's controls keep from work asks again, by default. */
const WORK_DISABLED_RETRY_MS = 30_000;
/** Thinking tokens of a custom model with `enableThinking` and no `thinkingMaxTokens`. */
const DEFAULT_THINKING_BUDGET = 4_096;
/** Every second while working: a user's interrupt comes back in the heartbeat's answer, so it is seen within 2 s. */
export const HEARTBEAT_MS = 1_000;
/** How long one request waits for a person's decision on a tool call (the server's longest is 30 s); it is asked again until decided. */
const APPROVAL_WAIT_MS = 25_000;
/** The abort reason of a turn a user interrupted (other aborts are the agent stopping). */
const INTERRUPTED = Symbol('interrupted');
const INTERRUPTED_NOTE = 'Interrupted by a user: the agent stopped here (its model call and any command it was running). Send a message to continue.';

export interface AgentOptions {
  client: AgentChannel;
  /** The user-level hooks file (read again at every turn, so edits apply without a restart). */
  hooksFile?: string;
  /** Where transcripts are written for hooks (`transcript_path`). */
  stateDir: string;
  /** The agent's own model; null to use the organization's custom models through the relay (or none). */
  model: ModelApi | null;
  /** The server's model relay: its URL, the agent token, and the custom model to prefer. */
  relay?: { url: string; token: string; preferred?: string };
  workspace: string;
  /** Characters of conversation past which it is compacted (DEFAULT_CONTEXT_CHARS when not set). */
  contextChars?: number;
  computerId?: string;
  /** How often to ask again for work while the organization's controls keep the computer from it (ms). */
  workDisabledRetryMs?: number;
  /** How often to remove the git worktrees of sessions that are gone (ms; runInWorktree). */
  worktreePruneMs?: number;
  log: (line: string) => void;
}

const NO_MODEL =
  "No model is configured for this agent, so it cannot work on this message. Add a custom model to the organization's enterprise " +
  'controls (customModels, with provider anthropic for a Messages API model), or start the agent with AGENT_MODEL_BASE_URL ' +
  '(an OpenAI-compatible endpoint, e.g. https://api.example.com/v1, or with AGENT_MODEL_PROVIDER=anthropic an Anthropic one, ' +
  'e.g. https://api.anthropic.com), AGENT_MODEL (the model id) and, if the endpoint needs one, AGENT_MODEL_API_KEY; see docs/agents.md.';

/**
 * The reference agent: takes work from the agent channel, runs the model with the workspace tools
 * until it answers without tool calls, and writes every step back as messages. Conversations are
 * kept in memory per session; the user messages of each turn come with the work.
 */
export class Agent {
  private readonly histories = new Map<string, ChatMessage[]>();
  /** Where each session works: its git worktree under runInWorktree, else the workspace. */
  private readonly places = new Map<string, string>();
  private lastPrune = 0;
  private stopping = false;
  /** Aborted by `stop()`: ends a claim that is waiting for work. */
  private readonly stopSignal = new AbortController();
  private current: AbortController | null = null;
  /** The organization's MCP servers, connected once and kept across turns (through the platform, so only with it). */
  private readonly mcp: McpConnections | null;
  /** Custom models reached with this computer's cloud credentials, by id. */
  private readonly cloudCredentials = new Map<string, CloudCredentials>();
  /** The organization's plugins (enabledPlugins), loaded again when the settings change. */
  private readonly plugins: Plugins;
  /** Plugin and extension problems already said in the log, so that each is said once. */
  private readonly pluginProblems = new Set<string>();
  /** What the agent finds of the organization's marketplaces, told to the server; none without a server to tell. */
  private readonly catalogReports: CatalogReports | null;
  /** The text of attached PDFs, for models that do not read them: read once for all turns and sessions, not at every turn. */
  private readonly pdfTexts = new PdfTexts();

  constructor(private readonly options: AgentOptions) {
    const { relay, workspace, log } = options;
    this.mcp = relay ? new McpConnections({ platformUrl: relay.url, token: relay.token, workspace, log }) : null;
    this.plugins = new Plugins(options.stateDir);
    const report = options.client.reportPluginCatalog?.bind(options.client);
    this.catalogReports = report ? new CatalogReports(this.plugins, report, log) : null;
  }

  /** Takes and does work until `stop()`; network trouble and server restarts only pause it. */
  async run(hostname: string): Promise<void> {
    const { client, log } = this.options;
    await this.untilDone(() => client.connect(hostname), 'connect');
    log(`connected as ${hostname}; workspace ${this.options.workspace}`);
    let paused = false;
    while (!this.stopping) {
      let work: Work | null = null;
      await this.pruneWorktrees();
      try {
        const asked = Date.now();
        work = await client.claim(CLAIM_WAIT_MS, this.stopSignal.signal);
        if (paused) log('taking work again');
        paused = false;
        // Empty long before the wait was up: the server is stopping (or something in between cut the poll). Ask again
        // after a pause, through the load balancer, rather than at once in a loop.
        if (!work && !this.stopping && Date.now() - asked < CLAIM_WAIT_MS / 2) {
          await sleep(EARLY_EMPTY_CLAIM_PAUSE_MS, undefined, { signal: this.stopSignal.signal }).catch(() => undefined);
        }
      } catch (error) {
        if (this.stopping) break;
        // Controls that keep this computer from work can be turned back on: wait, said once, rather than exit and be restarted in a loop.
        if (error instanceof ChannelRefusal && error.code === 'computer_work_disabled') {
          const retryMs = this.options.workDisabledRetryMs ?? WORK_DISABLED_RETRY_MS;
          if (!paused) log(`not taking work: ${error.body.detail ?? 'turned off by the organization'} Asking again every ${retryMs / 1000} s.`);
          paused = true;
          await sleep(retryMs, undefined, { signal: this.stopSignal.signal }).catch(() => undefined);
          continue;
        }
        // A token the server refuses (deleted computer, rotated token) will not start working again.
        if (error instanceof ChannelRefusal && (error.status === 401 || error.status === 403)) throw error;
        log(`could not take work: ${(error as Error).message}`);
        await sleep(2_000);
        continue;
      }
      if (work) await this.turn(work);
    }
  }

  /**
   * Stops taking work; a turn under way is cut short, says so, fires `SessionEnd` (reason `other`) and
   * ends, so its session does not wait for a lease to run out. `run()` resolves when that is done.
   */
  stop(): void {
    this.stopping = true;
    this.stopSignal.abort();
    this.current?.abort();
    void this.mcp?.close();
  }

  /** One turn: the model and its tools until an answer without tool calls, then the end of the turn. */
  async turn(work: Work): Promise<void> {
    const { client, log } = this.options;
    const started = Date.now();
    const abort = (this.current = new AbortController());
    const known = this.histories.get(work.sessionId);
    const history: ChatMessage[] = known ?? [];
    let beating = false;
    const heartbeat = setInterval(() => {
      if (beating) return;
      beating = true;
      client
        .heartbeat(work.sessionId, work.turnId)
        .then((answer) => {
          if (!answer?.interrupted || abort.signal.aborted) return;
          log(`session ${work.sessionId}: interrupted by a user; stopping the turn`);
          abort.abort(INTERRUPTED);
        })
        .catch(() => undefined)
        .finally(() => (beating = false));
    }, HEARTBEAT_MS);
    let hooks = new TurnHooks(this, work, history, {});
    // Best effort: a delta that cannot be sent is dropped, never a reason for the turn to wait or fail.
    const deltas = new DeltaPublisher(
      // `kind` only when not text: a server from before kinds takes the text still.
      ({ kind, ...delta }) => client.delta(work.sessionId, { turnId: work.turnId, ...delta, ...(kind === 'text' ? {} : { kind }) }),
      { retryAfterOf: (error) => (error instanceof DeltaRefused ? error.retryAfterMs : null) },
    );
    try {
      const policy = await client.policy();
      const place = policy.sessionDefaultSettings.runInWorktree ? await this.worktrees.forSession(work.sessionId) : { path: this.options.workspace };
      if ('path' in place) this.places.set(work.sessionId, place.path);
      if (!known) history.push(...(await this.earlierConversation(work)));
      const plugins = await this.loadPlugins(policy);
      this.catalogReports?.report(policy);
      const extensions = await this.loadExtensions(work, plugins);
      hooks = new TurnHooks(this, work, history, withPluginHooks(await this.loadHooks(work), plugins.hooks));
      if (!known) await hooks.fire('SessionStart', { source: history.length > 0 ? 'resume' : 'startup' });
      let prompts = 0;
      /** The user's messages of this turn, as the model gets them: an MCP prompt typed as a command is filled in once the servers are known. */
      const typed: ChatMessage[] = [];
      for (const message of work.messages) {
        const prompt = userMessage(message);
        // A custom command (the repository's, the user's or a plugin's): `/name args` stands for its prompt.
        prompt.content = expandCommand(prompt.content, extensions.commands) ?? prompt.content;
        const run = await hooks.fire('UserPromptSubmit', { prompt: prompt.content });
        if (run?.blocked) {
          await this.say(work, `A UserPromptSubmit hook blocked this message: ${run.blockReason}`);
          continue;
        }
        history.push(prompt);
        typed.push(prompt);
        prompts++;
      }
      const settings = work.session.sessionSettings ?? {};
      const spec = settings.interactionMode === 'spec';
      const modelField = spec && settings.specModeModel !== undefined ? 'specModeModel' : 'model';
      const wanted = settings[modelField];
      // The router chooses among the allowed models by the organization's rules, and says so in the session.
      const routed = wanted === ROUTER_MODEL_ID && prompts > 0 && 'path' in place ? await this.route(work, policy, history, abort.signal) : null;
      const model = routed ? routed.model : this.modelFor(policy, wanted);
      const refusal =
        prompts === 0
          ? 'Every message of this turn was blocked by a hook; nothing was sent to the model.'
          : 'refusal' in place
            ? place.refusal
            : routed?.refusal
              ? routed.refusal
              : model
                ? ((routed ? null : unreachableModel(wanted, model, modelField)) ??
                  lockRefusal(settings, this.lockOf(policy, model)) ??
                  refusalOf(model.config.model, policy) ??
                  (model === this.options.model ? await modelNetworkRefusal(model, policy) : null))
                : null;
      if (refusal || !model) {
        if (prompts > 0) await this.say(work, refusal ?? NO_MODEL);
        await hooks.fire('Notification', { message: refusal ?? NO_MODEL });
      } else {
        const approvalRules = [policy.toolApproval, settings.toolApproval];
        const selection = new ToolSelection(settings);
        const { tools: mcpTools, extras: mcpExtras, prompts: mcpPrompts } = await this.mcpTools(work, policy, selection, spec, abort.signal, plugins);
        await this.expandMcpPrompts(work, typed, mcpPrompts);
        const memory = await loadMemory(this.workspaceFor(work.sessionId), this.options.hooksFile);
        const ending = await this.work(
          {
            work,
            signal: abort.signal,
            hooks,
            model: deltas.counting(
              readingDocuments(
                takesNoImages(policy, model.config.model) ? describingImages(model) : model,
                model.provider === 'anthropic' && !takesNoImages(policy, model.config.model),
                this.pdfTexts,
              ),
            ),
            policy,
            spec,
            autonomyLevel: settings.autonomyLevel,
            reasoningEffort: spec ? (settings.specModeReasoningEffort ?? settings.reasoningEffort) : settings.reasoningEffort,
            approvalRules,
            // Reported with the usage: a session that has no lock yet stays on this provider and API (a routed one is never locked).
            lock: routed ? undefined : this.lockOf(policy, model),
            ask: settings.interactionMode === 'ask',
            unattended: settings.autonomyMode === 'unattended',
            selection,
            memory,
            mcpTools,
            mcpExtras,
            skills: extensions.skills,
            agents: extensions.agents,
            nested: new NestedInstructions(this.workspaceFor(work.sessionId)),
            live: deltas,
          },
          history,
        );
        if (ending) await hooks.fire('Notification', { message: ending });
        else await hooks.fire('Stop', { stop_hook_active: false });
      }
      if (this.stopping) await hooks.fire('SessionEnd', { reason: 'other' });
      await client.endTurn(work.sessionId, work.turnId, Date.now() - started);
      log(`session ${work.sessionId}: turn done in ${Date.now() - started} ms`);
    } catch (error) {
      if (error instanceof ChannelRefusal && error.code === 'turn_not_active') {
        log(`session ${work.sessionId}: the turn was taken back (its lease ran out); leaving it`);
      } else {
        log(`session ${work.sessionId}: turn failed: ${(error as Error).message}`);
        await hooks.fire('SessionEnd', { reason: 'error' }).catch(() => undefined);
      }
    } finally {
      clearInterval(heartbeat);
      void deltas.close();
      this.histories.set(work.sessionId, history);
      this.current = null;
    }
  }

  /** The model and its tools until an answer without tool calls; what went wrong (said in the session) when it ends otherwise. */
  private async work(turn: TurnContext, history: ChatMessage[]): Promise<string | null> {
    const outcome = await this.loop(turn, history, null);
    if ('answer' in outcome) return null;
    if (turn.signal.reason === INTERRUPTED) {
      // What the agent has is written already (its answers and tool results so far); this closes the turn for the user and the model.
      history.push({ role: 'assistant', content: INTERRUPTED_NOTE });
      await this.options.client.append(turn.work.sessionId, turn.work.turnId, [{ role: 'assistant', content: [{ type: 'text', text: INTERRUPTED_NOTE }] }]);
      return INTERRUPTED_NOTE;
    }
    await this.say(turn.work, outcome.failure);
    return outcome.failure;
  }

  /**
   * The model loop, for the agent itself or for a subagent its `Task` tool started: every answer and
   * tool result is written to the session (a subagent's hidden from user views), until an answer
   * without tool calls, or a failure that says why.
   */
  private async loop(
    turn: TurnContext,
    history: ChatMessage[],
    subagent: { maxSteps: number; definition?: SubagentDefinition } | null,
  ): Promise<{ answer: string } | { failure: string }> {
    const { client } = this.options;
    const { work, signal, hooks, model, policy } = turn;
    const workspaceTools = turn.spec ? WORKSPACE_TOOLS.filter((tool) => READ_ONLY_TOOLS.has(tool.name)) : WORKSPACE_TOOLS;
    // The session's enabledToolIds and disabledToolIds bind the agent and its subagents alike.
    // Tools beside the workspace's: the Skill tool when there are skills, the web's, and the plan.
    const searchUrl = webSettings().searchUrl;
    const extras = [
      ...(turn.skills.length > 0 ? [skillTool(turn.skills)] : []),
      webFetchTool,
      ...(searchUrl ? [webSearchTool(searchUrl)] : []),
      planTool,
      ...turn.mcpExtras,
    ];
    // A custom subagent's `tools` narrow them further.
    const own = (name: string) => !subagent?.definition?.tools || definesTool(subagent.definition.tools, name);
    const task = taskTool(turn.agents);
    const tools = (subagent ? [...workspaceTools, ...extras] : [...workspaceTools, ...extras, task]).filter(
      (tool) => turn.selection.allows(tool.name) && own(tool.name),
    );
    const offeredMcp = turn.mcpTools.filter((tool) => own(tool.name));
    const mcpTools = new Map(offeredMcp.map((tool) => [tool.name, tool]));
    const specs: ToolSpec[] = [...tools, ...offeredMcp].map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
    const system =
      (subagent
        ? subagentPrompt(this.workspaceFor(work.sessionId), turn.memory, subagent.definition)
        : systemPrompt(this.workspaceFor(work.sessionId), turn.memory)) +
      skillsPrompt(turn.skills) +
      (turn.spec ? SPEC_MODE : '');
    const hidden = subagent ? { hiddenFromUserViews: true } : {};
    const stopped = { failure: 'The agent was stopped before the task was done; send a message to continue.' };
    const maxSteps = subagent?.maxSteps ?? MAX_STEPS_PER_TURN;
    for (let step = 0; step < maxSteps; step++) {
      if (signal.aborted) return stopped;
      let answer;
      try {
        await this.compactIfLarge(turn, history);
        answer = await model.complete([{ role: 'system', content: system }, ...history], specs, {
          signal,
          onText: turn.live?.onText,
          onThinking: turn.live?.onThinking,
          onToolInput: turn.live?.onToolInput,
          reasoningEffort: turn.reasoningEffort,
          onRetry: ({ attempt, delayMs, error }) =>
            this.options.log(`session ${work.sessionId}: model call ${attempt} failed (${error.message}); retrying in ${delayMs} ms`),
        });
      } catch (error) {
        if (signal.aborted) return stopped;
        if (!(error instanceof ModelError)) throw error;
        const retried = error.attempts > 1 ? ` (retried ${error.attempts - 1} ${error.attempts === 2 ? 'time' : 'times'})` : '';
        return { failure: `The model failed${retried}: ${error.message}` };
      }
      await client.usage(work.sessionId, { turnId: work.turnId, model: model.config.model, ...answer.usage, ...turn.lock });
      history.push({
        role: 'assistant',
        content: answer.text || null,
        ...(answer.toolCalls.length ? { tool_calls: answer.toolCalls } : {}),
        ...(answer.thinking ? { thinking: answer.thinking } : {}),
      });
      await client.append(work.sessionId, work.turnId, [{ ...assistantMessage(model.config.model, answer), ...hidden }]);
      if (answer.toolCalls.length === 0) return { answer: answer.text };
      const results: Array<{ call: ToolCall; result: ToolResult }> = [];
      for (const call of answer.toolCalls) {
        const input = parseArguments(call);
        const pre = await hooks.fire('PreToolUse', { tool_name: call.function.name, tool_input: input ?? {}, tool_use_id: call.id }, call);
        let result: ToolResult;
        const mcpTool = mcpTools.get(call.function.name);
        // A tool the session keeps from the agent is refused even when the model names it unoffered.
        const unselected =
          tools.some((tool) => tool.name === call.function.name) || mcpTool
            ? null
            : own(call.function.name)
              ? turn.selection.refusal(call.function.name)
              : `Not run: the ${subagent!.definition!.name} subagent may use only its own tools (${subagent!.definition!.tools!.join(', ')}).`;
        const autonomy = mcpTool
          ? mcpAutonomyRefusal(turn.autonomyLevel, { name: mcpTool.server, url: mcpTool.url }, policy)
          : autonomyRefusal(turn.autonomyLevel, call.function.name, input);
        // Only a call that would run is put to a person: not one refused anyway, nor one of a tool unknown or not offered.
        const runnable = (tools.some((tool) => tool.name === call.function.name) || mcpTool !== undefined) && input !== null;
        const approval = runnable ? (approvalNeeded(turn.approvalRules, call.function.name, input) ?? askModeApproval(turn, call.function.name)) : null;
        const refused =
          signal.aborted || pre?.blocked || autonomy || !approval
            ? null
            : turn.unattended
              ? { isError: true, content: `Not run: ${approval}, and this session runs unattended (autonomyMode unattended), so no one is asked.` }
              : await this.approve(turn, call, input);
        if (signal.aborted) result = { isError: true, content: 'Not run: the turn was interrupted or stopped first.' };
        else if (unselected) result = { isError: true, content: unselected };
        else if (pre?.blocked) result = { isError: true, content: `A PreToolUse hook blocked this call: ${pre.blockReason}` };
        else if (autonomy) result = { isError: true, content: autonomy };
        else if (refused) result = refused;
        else if (call.function.name === task.name && !subagent) result = await this.task(turn, input);
        else if (mcpTool && this.mcp)
          result = input
            ? await this.mcp.call(mcpTool, input, signal)
            : { isError: true, content: `The arguments of ${call.function.name} must be a JSON object.` };
        else if (!tools.some((tool) => tool.name === call.function.name) && toolNamed(call.function.name))
          result = {
            isError: true,
            content: `${call.function.name} is not available in spec mode: investigate with ${[...READ_ONLY_TOOLS].join(', ')} and answer with the spec.`,
          };
        else {
          const output = liveOutput(turn, call);
          result = await runTool(extras.find((tool) => tool.name === call.function.name) ?? toolNamed(call.function.name), call, input, {
            workspace: this.workspaceFor(work.sessionId),
            policy,
            signal,
            onOutput: output.write,
          });
          await output.end();
        }
        // The AGENTS.md of the folders a file tool reached, new to this turn, come with its result.
        const reached = !result.isError && input ? pathOf(call.function.name, input) : null;
        const nested = reached === null ? null : await turn.nested.for(reached);
        if (nested) result = { ...result, content: `${result.content}\n\n${nested}` };
        // Before anything else sees it (hooks, the session, the model): credentials in the output are redacted.
        if (policy.enableAgentShield) result = await shielded(result);
        const post = await hooks.fire(
          'PostToolUse',
          { tool_name: call.function.name, tool_input: input ?? {}, tool_response: { content: result.content, isError: result.isError }, tool_use_id: call.id },
          call,
        );
        if (post?.blocked) result = { ...result, content: `${result.content}\n\nA PostToolUse hook says: ${post.blockReason}` };
        results.push({ call, result });
        history.push({
          role: 'tool',
          tool_call_id: call.id,
          content: result.content,
          ...(result.isError ? { isError: true } : {}),
          ...(result.images?.length ? { images: result.images } : {}),
        });
      }
      await client.append(work.sessionId, work.turnId, [
        {
          role: 'tool',
          content: results.map(({ call, result }) => ({
            type: 'tool_result',
            toolUseId: call.id,
            content: result.content || '(no output)',
            isError: result.isError,
          })),
          ...hidden,
        },
      ]);
    }
    return { failure: subagent ? `Stopped after ${maxSteps} model calls.` : `Stopped after ${maxSteps} model calls in one turn; send a message to continue.` };
  }

  /**
   * Asks a person of the session to approve the call and waits for the answer (heartbeats go on, so
   * the lease holds): null when allowed, else the result the model gets instead of running it.
   */
  private async approve(turn: TurnContext, call: ToolCall, input: Record<string, unknown> | null): Promise<ToolResult | null> {
    const { client, log } = this.options;
    const { work, signal } = turn;
    const summary = callSummary(call.function.name, input);
    try {
      let approval = await client.requestApproval(work.sessionId, {
        turnId: work.turnId,
        toolName: call.function.name,
        toolCallId: call.id,
        summary,
        input: input ?? {},
      });
      log(`session ${work.sessionId}: waiting for a person to approve ${call.function.name}: ${summary}`);
      while (approval.status === 'pending' && !signal.aborted) {
        approval = await client.awaitApproval(work.sessionId, approval.approvalId, work.turnId, APPROVAL_WAIT_MS, signal);
      }
      if (signal.aborted) return { isError: true, content: 'Not run: the turn was interrupted while the call waited for approval.' };
      switch (approval.status) {
        case 'allowed':
          return null;
        case 'denied':
          return { isError: true, content: `A person denied this call; it was not run.${approval.message ? ` They said: ${approval.message}` : ''}` };
        case 'expired':
          return { isError: true, content: 'Nobody approved this call in the time allowed, so it was not run.' };
        default:
          return { isError: true, content: 'Not run: the approval was cancelled (the turn ended or was interrupted).' };
      }
    } catch (error) {
      if (signal.aborted) return { isError: true, content: 'Not run: the turn was interrupted while the call waited for approval.' };
      throw error;
    }
  }

  /**
   * The MCP tools of the turn: none in spec mode (it offers tools that read only, and an MCP tool's
   * effects are unknown); else those of every server the policy lets the agent use, less those the
   * session's `enabledToolIds` and `disabledToolIds` keep from it. A server that fails is said in the session and offers nothing; the turn goes on.
   */
  private async mcpTools(
    work: Work,
    policy: AgentPolicy,
    selection: ToolSelection,
    spec: boolean,
    signal: AbortSignal,
    plugins: LoadedPlugins,
  ): Promise<{ tools: McpTool[]; extras: AgentTool[]; prompts: McpPrompt[] }> {
    if (spec || !this.mcp) return { tools: [], extras: [], prompts: [] };
    // A user's interrupt during the connections ends them at once (a server may take up to 30 s to start).
    const { tools, problems, resources, prompts = [] } = await this.mcp.toolset(policy, selection, signal, plugins.mcpServers);
    for (const problem of problems) await this.say(work, problem);
    return { tools, extras: mcpExtraTools(this.mcp, resources ?? [], prompts), prompts };
  }

  /**
   * A message `/mcp__{server}__{prompt} args` becomes the text of that MCP prompt, as a custom command becomes its
   * prompt: the words fill the prompt's arguments in order, the last one taking the rest. A prompt that cannot be
   * given leaves the message as typed, and the session says why.
   */
  private async expandMcpPrompts(work: Work, typed: ChatMessage[], prompts: readonly McpPrompt[]): Promise<void> {
    if (!this.mcp || prompts.length === 0) return;
    for (const message of typed) {
      const match = typeof message.content === 'string' ? /^\/mcp__([A-Za-z0-9_-]+?)__(\S+)(?:\s+([\s\S]*))?$/.exec(message.content.trim()) : null;
      const prompt = match && prompts.find((candidate) => candidate.server === match[1] && candidate.name === match[2]);
      if (!match || !prompt) continue;
      const words = (match[3] ?? '').trim().split(/\s+/).filter(Boolean);
      const args = Object.fromEntries(
        prompt.arguments.flatMap((name, index) => {
          const value = index === prompt.arguments.length - 1 ? words.slice(index).join(' ') : words[index];
          return value ? [[name, value]] : [];
        }),
      );
      const given = await this.mcp.promptText(prompt.server, prompt.name, args);
      if ('text' in given) message.content = given.text;
      else await this.say(work, `The MCP prompt ${prompt.name} of ${prompt.server} could not be given, so the message goes as typed: ${given.error}`);
    }
  }

  /**
   * A conversation grown past the context budget is replaced by the model's own summary of it, after
   * the `PreCompact` hooks (`trigger: auto`); the session says so. The stored messages stay whole.
   */
  private async compactIfLarge(turn: TurnContext, history: ChatMessage[]): Promise<void> {
    const budget = contextBudget(this.options.contextChars ?? DEFAULT_CONTEXT_CHARS, turn.policy, turn.model.config.model);
    const size = history.reduce((sum, m) => sum + (m.content?.length ?? 0) + ('tool_calls' in m ? JSON.stringify(m.tool_calls ?? []).length : 0), 0);
    if (size <= budget) return;
    await turn.hooks.fire('PreCompact', { trigger: 'auto', custom_instructions: null });
    const answer = await turn.model.complete([{ role: 'system', content: COMPACT_SYSTEM }, ...history, { role: 'user', content: COMPACT_REQUEST }], [], {
      signal: turn.signal,
    });
    await this.options.client.usage(turn.work.sessionId, { turnId: turn.work.turnId, model: turn.model.config.model, ...answer.usage, ...turn.lock });
    if (!answer.text.trim()) throw new ModelError('it answered the request to summarise the conversation with nothing');
    history.splice(0, history.length, { role: 'user', content: `${COMPACTED_PREFIX}\n\n${answer.text.trim()}` });
    await this.say(turn.work, `The conversation had grown past ${budget} characters, so it was compacted: the model goes on from its own summary of it.`);
  }

  /**
   * The `Task` tool: a subagent with a fresh conversation (the prompt alone) and the workspace tools
   * does a self-contained part of the work; its final answer is the tool's result. `SubagentStop`
   * fires when it has finished.
   */
  private async task(turn: TurnContext, input: Record<string, unknown> | null): Promise<ToolResult> {
    const prompt = input?.prompt;
    if (typeof prompt !== 'string' || prompt.trim() === '')
      return { isError: true, content: 'Task needs "prompt": the whole task for the subagent, as a non-empty string.' };
    const kind = input?.subagent_type;
    const definition = typeof kind === 'string' && kind !== GENERAL_SUBAGENT ? turn.agents.find((agent) => agent.name === kind) : undefined;
    if (typeof kind === 'string' && kind !== GENERAL_SUBAGENT && !definition) {
      return {
        isError: true,
        content: `There is no subagent named ${kind}; the subagents are ${[GENERAL_SUBAGENT, ...turn.agents.map((a) => a.name)].join(', ')}.`,
      };
    }
    // A subagent naming its own model runs it, when the policy allows it and this agent can reach it; never another in silence.
    let model = turn.model;
    if (definition?.model) {
      const named = this.modelFor(turn.policy, definition.model);
      const refusal =
        named?.config.model === definition.model ? refusalOf(definition.model, turn.policy) : `this agent cannot reach the model ${definition.model}`;
      if (refusal || !named) return { isError: true, content: `The subagent ${definition.name} was not started: ${refusal}` };
      model = named;
    }
    // A subagent's work is not streamed: its messages are hidden from user views, and its report comes back as the Task result.
    const outcome = await this.loop(
      { ...turn, model, live: undefined, nested: new NestedInstructions(this.workspaceFor(turn.work.sessionId)) },
      [{ role: 'user', content: prompt }],
      { maxSteps: SUBAGENT_MAX_STEPS, definition },
    );
    if (!turn.signal.aborted) await turn.hooks.fire('SubagentStop', { stop_hook_active: false });
    if ('answer' in outcome) return { isError: false, content: outcome.answer || '(the subagent answered nothing)' };
    return { isError: true, content: `The subagent did not finish: ${outcome.failure}` };
  }

  /**
   * What the session said before this turn, for an agent that does not know it (it restarted, or the
   * session was another agent's): user messages, answers with their tool calls, and tool results, up to
   * the turn's own messages. Tool calls without a recorded result (a turn cut short) are left out.
   */
  private async earlierConversation(work: Work): Promise<ChatMessage[]> {
    const own = new Set(work.messages.map((m) => m.id));
    const earlier: Message[] = [];
    let cursor: string | undefined;
    do {
      let page;
      try {
        page = await this.options.client.conversation(work.sessionId, work.turnId, cursor);
      } catch (error) {
        // The organization keeps message history from everyone, agents included: the turn starts from its own messages.
        if (error instanceof ChannelRefusal && error.code === 'message_history_disabled') return [];
        throw error;
      }
      const end = page.messages.findIndex((m) => own.has(m.id));
      earlier.push(...(end === -1 ? page.messages : page.messages.slice(0, end)));
      cursor = end === -1 ? (page.nextCursor ?? undefined) : undefined;
    } while (cursor);
    return toChatHistory(earlier);
  }

  /** The commands, skills and subagents of the repository, the user and the plugins; what did not load is said in the log, once. */
  private async loadExtensions(work: Work, plugins: LoadedPlugins): Promise<Extensions> {
    const userFolders = this.options.hooksFile ? [dirname(this.options.hooksFile)] : [];
    userFolders.push(join(homedir(), '.claude'), join(homedir(), '.factory'));
    const extensions = await turnExtensions(this.workspaceFor(work.sessionId), userFolders, plugins);
    this.logOnce(extensions.problems);
    return extensions;
  }

  private logOnce(problems: readonly string[]): void {
    for (const problem of problems) {
      if (this.pluginProblems.has(problem)) continue;
      this.pluginProblems.add(problem);
      this.options.log(problem);
    }
  }

  /** The organization's enabled plugins; what kept one from loading is said in the log, once. */
  private async loadPlugins(policy: AgentPolicy): Promise<LoadedPlugins> {
    const plugins = await this.plugins.load(policy).catch((error: Error) => ({ ...NO_PLUGINS, problems: [`plugins did not load: ${error.message}`] }));
    this.logOnce(plugins.problems);
    return plugins;
  }

  /** The hooks file, or none (with a message in the turn saying why) when it cannot be used. */
  private async loadHooks(work: Work): Promise<HooksConfig> {
    if (!this.options.hooksFile) return {};
    try {
      return await loadHooks(this.options.hooksFile);
    } catch (error) {
      if (!(error instanceof HooksConfigError)) throw error;
      this.options.log(`hooks are off: ${error.message}`);
      await this.say(work, `Hooks are off for this turn: the hooks file is invalid. ${error.message}`);
      return {};
    }
  }

  /** Records a hook run on the session (through the `hook*` message fields). */
  async record(work: Work, message: AgentMessage): Promise<void> {
    await this.options.client.append(work.sessionId, work.turnId, [message]);
  }

  get workspace(): string {
    return this.options.workspace;
  }

  /** The provider and API a model is reached with, as a session's locks name them. */
  private lockOf(policy: AgentPolicy, model: ModelApi): ModelLock {
    const custom = model !== this.options.model && policy.customModels.some((candidate) => candidate.id === model.config.model);
    return { provider: custom ? 'custom' : model.provider, api: model.provider === 'anthropic' ? 'messages' : 'chat-completions' };
  }

  /** Where a session works: its git worktree (runInWorktree), else the workspace. */
  workspaceFor(sessionId: string): string {
    return this.places.get(sessionId) ?? this.options.workspace;
  }

  private get worktrees(): Worktrees {
    return new Worktrees(this.options.workspace, this.options.stateDir);
  }

  /**
   * Best effort, now and then: removes the git worktrees of sessions that no longer exist (deleted, or swept by
   * retention), and their branches unless those hold commits found nowhere else.
   */
  private async pruneWorktrees(): Promise<void> {
    if (Date.now() - this.lastPrune < (this.options.worktreePruneMs ?? WORKTREE_PRUNE_MS)) return;
    this.lastPrune = Date.now();
    try {
      const kept = await this.worktrees.sessions();
      for (let i = 0; i < kept.length; i += 100) {
        const batch = kept.slice(i, i + 100);
        const existing = new Set(await this.options.client.existingSessions(batch));
        for (const sessionId of batch.filter((id) => !existing.has(id))) {
          await this.worktrees.remove(sessionId);
          this.places.delete(sessionId);
          this.options.log(`session ${sessionId} is gone: removed its git worktree`);
        }
      }
    } catch (error) {
      this.options.log(`could not clean up the worktrees of gone sessions: ${(error as Error).message}`);
    }
  }

  get stateDir(): string {
    return this.options.stateDir;
  }

  /**
   * The model of a turn: the organization's custom model the session names (`specModeModel` in spec
   * mode, else `model`), through the server's relay; else the agent's own model; else the first
   * custom model (`AGENT_MODEL` when it names one, else the first by `index` the policy does not block).
   * A session naming a model this agent has no way to reach gets the agent's model, which the turn then refuses (unreachableModel).
   */
  private modelFor(policy: AgentPolicy, sessionModel: string | undefined): ModelApi | null {
    const relay = this.options.relay;
    const models = [...policy.customModels].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    const named = sessionModel === undefined ? undefined : models.find((m) => m.id === sessionModel);
    const chosen =
      named ?? (this.options.model ? undefined : (models.find((m) => m.id === relay?.preferred) ?? models.find((m) => refusalOf(m.id, policy) === null)));
    if (!relay || !chosen) return this.options.model;
    const cloudBaseUrl = chosen.cloudModelConfig?.cloudBaseUrl;
    if (cloudBaseUrl) {
      // Reached from here, with this computer's cloud credentials (the relay holds none of them).
      return modelClient(chosen.provider, {
        baseUrl: cloudBaseUrl,
        model: chosen.id,
        vendorModel: chosen.model,
        extraArgs: chosen.extraArgs,
        maxOutputTokens: chosen.maxOutputTokens,
        auth: this.cloudCredentialsOf(chosen.id),
        ...(chosen.provider === 'anthropic' && chosen.enableThinking ? { thinkingBudgetTokens: chosen.thinkingMaxTokens ?? DEFAULT_THINKING_BUDGET } : {}),
      });
    }
    const baseUrl = `${relay.url}/api/v0/agent/models/${encodeURIComponent(chosen.id)}`;
    if (chosen.provider !== 'anthropic') return modelClient(chosen.provider, { baseUrl, model: chosen.id, apiKey: relay.token });
    // The relay takes the agent token as Authorization whatever the API; it sends the model's own key as x-api-key.
    return modelClient(chosen.provider, {
      baseUrl,
      model: chosen.id,
      extraHeaders: { authorization: `Bearer ${relay.token}` },
      maxOutputTokens: chosen.maxOutputTokens,
      ...(chosen.enableThinking ? { thinkingBudgetTokens: chosen.thinkingMaxTokens ?? DEFAULT_THINKING_BUDGET } : {}),
    });
  }

  /** The cloud credentials of a custom model, kept across turns so that they are exported again only when they expire. */
  private cloudCredentialsOf(customModelId: string): CloudCredentials {
    let credentials = this.cloudCredentials.get(customModelId);
    if (!credentials) {
      credentials = new CloudCredentials(() => this.options.client.cloudModelAccess(customModelId), this.options.workspace);
      this.cloudCredentials.set(customModelId, credentials);
    }
    return credentials;
  }

  /**
   * The model router: the model for this turn among routerCandidates. With several, a routing call (to the
   * agent's own model, else the first candidate) reads the turn's request against the organization's guidance
   * and rules and names one; an answer naming none gets the first. The choice and its reason are said in the
   * session. With none, the turn is refused with the reason.
   */
  private async route(work: Work, policy: AgentPolicy, history: ChatMessage[], signal: AbortSignal): Promise<{ model: ModelApi | null; refusal?: string }> {
    const settings = work.session.sessionSettings ?? {};
    const all = routerCandidates(policy, this.options.model?.config.model);
    const modelOf = (id: string) => (all.find((c) => c.id === id)?.own ? this.options.model : this.modelFor(policy, id));
    // A session locked to a provider or an API is routed among the models it allows.
    const candidates = all.filter((candidate) => lockRefusal(settings, this.lockOf(policy, modelOf(candidate.id)!)) === null);
    if (candidates.length === 0) {
      return {
        model: null,
        refusal:
          'This session asks for the model router, and it has no model to choose: this agent has no model of its own that the model policy allows, ' +
          "and no custom model is marked useInRouter (with modelPolicy.allowServiceRouterByok on, for the router to use the organization's own models). Nothing was sent to any model.",
      };
    }
    let choice = { id: candidates[0].id, reason: 'the only model the router may use' };
    if (candidates.length > 1) {
      const router = modelOf(candidates[0].id)!;
      const request = history.filter((m) => m.role === 'user').at(-1)?.content ?? '';
      try {
        const answer = await router.complete(routingPrompt(policy, candidates, request), [], { signal });
        await this.options.client.usage(work.sessionId, { turnId: work.turnId, model: router.config.model, ...answer.usage });
        choice = parseChoice(answer.text, candidates) ?? {
          id: candidates[0].id,
          reason: 'the routing answer named no model it may use, so the first was taken',
        };
      } catch (error) {
        if (signal.aborted) throw error;
        choice = { id: candidates[0].id, reason: `the routing call failed (${(error as Error).message}), so the first model was taken` };
      }
    }
    const name = candidates.find((c) => c.id === choice.id)?.displayName;
    await this.say(work, `The model router chose ${name ? `${name} (${choice.id})` : choice.id} for this turn: ${choice.reason}`);
    return { model: modelOf(choice.id) };
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

/** A tool call's arguments as an object, or null when they are not a JSON object. */
function parseArguments(call: ToolCall): Record<string, unknown> | null {
  try {
    const input = JSON.parse(call.function.arguments || '{}') as unknown;
    return isJsonObject(input) ? input : null;
  } catch {
    return null;
  }
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Where a tool's output goes as it comes (`tool_output` deltas): through Agent Shield first when it is on, as the
 * stored result is (so no credential reaches a viewer before its redaction); nowhere when the turn streams nothing.
 */
function liveOutput(turn: TurnContext, call: ToolCall): { write?: (text: string) => void; end(): Promise<void> } {
  const { live } = turn;
  if (!live) return { end: async () => undefined };
  const tool = { id: call.id, name: call.function.name };
  const send = (text: string) => live.onToolOutput(tool, text);
  if (!turn.policy.enableAgentShield) return { write: send, end: async () => undefined };
  const shieldedOutput = new ShieldedOutput(send);
  return { write: shieldedOutput.write, end: () => shieldedOutput.end() };
}

/**
 * A tool result with the credentials Agent Shield finds in it redacted, and a note saying which kinds; when it
 * cannot scan, the output is withheld (the shield fails closed).
 */
async function shielded(result: ToolResult): Promise<ToolResult> {
  try {
    const { text, kinds } = await redactSecrets(result.content);
    if (kinds.length === 0) return result;
    const note = `[Agent Shield (the organization's enableAgentShield) redacted ${kinds.length === 1 ? 'a credential' : `${kinds.length} credentials`} from this output: ${[...new Set(kinds)].join(', ')}]`;
    return { ...result, content: `${text}\n${note}` };
  } catch (error) {
    return { isError: true, content: `Agent Shield could not scan this output (${(error as Error).message}), so it is withheld.` };
  }
}

/** Characters of conversation per token of a model's context window the agent lets grow before it compacts: about four characters a token, less a quarter of the window kept for the answer. */
const CHARS_PER_CONTEXT_TOKEN = 3;

/**
 * How much conversation a turn's model takes before it is compacted: the agent's own budget, or less when
 * the model is a custom one whose `maxContextLimit` (tokens) is smaller.
 */
function contextBudget(agentBudget: number, policy: AgentPolicy, modelId: string): number {
  const limit = policy.customModels.find((model) => model.id === modelId)?.maxContextLimit;
  return typeof limit === 'number' && limit > 0 ? Math.min(agentBudget, limit * CHARS_PER_CONTEXT_TOKEN) : agentBudget;
}

/** The provider and API of a model, as `providerLock` and `apiProviderLock` name them. */
interface ModelLock {
  provider: NonNullable<UsageReport['provider']>;
  api: NonNullable<UsageReport['api']>;
}

/** Why the session's `providerLock` or `apiProviderLock` refuses the turn's model, or null. */
function lockRefusal(settings: SessionSettings, lock: ModelLock): string | null {
  for (const [field, locked, actual] of [
    ['providerLock', settings.providerLock, lock.provider],
    ['apiProviderLock', settings.apiProviderLock, lock.api],
  ] as const) {
    if (locked !== undefined && locked !== actual) {
      return `This session is locked to ${locked} (sessionSettings.${field}), and the model it would use is reached as ${actual}. Nothing was sent to any model; choose a model of ${locked}, or remove the lock.`;
    }
  }
  return null;
}

/**
 * Why a turn refuses to run: the session names a model (`model`, or `specModeModel` in spec mode) that is
 * neither one of the organization's custom models nor this agent's own, so another would answer in its
 * place; or null.
 */
function unreachableModel(wanted: string | undefined, model: ModelApi, field: 'model' | 'specModeModel'): string | null {
  if (wanted === undefined || model.config.model === wanted) return null;
  return (
    `This session asks for the model ${wanted} (sessionSettings.${field}), which this agent cannot reach: it is not one of ` +
    `the organization's custom models, and this agent's own model is ${model.config.model}. Nothing was sent to any model; ` +
    `change the session's model, or add ${wanted} to the organization's customModels.`
  );
}

/** Why the model may not be used under the policy (a sentence naming the rule), or null. */
function refusalOf(id: string, policy: AgentPolicy): string | null {
  const refusal = modelRefusal(policy.modelPolicy, policy.customModels, id, "the organization's model policy");
  return refusal ? `${refusal.detail} Nothing was sent to it; choose another model.` : null;
}

/**
 * Why the agent's own model endpoint may not be reached under `networkPolicy` (the relay is the platform
 * itself, which the policy does not cover), or null.
 */
async function modelNetworkRefusal(model: ModelApi, policy: AgentPolicy): Promise<string | null> {
  const allowedIps = AllowedIps.of(policy);
  const why = allowedIps ? await allowedIps.refusalFor(new URL(model.config.baseUrl).hostname) : null;
  return why ? `The organization's ${why}, so this agent cannot reach its model ${model.config.model}; nothing was sent to it.` : null;
}

async function runTool(
  tool: AgentTool | undefined,
  call: ToolCall,
  input: Record<string, unknown> | null,
  context: Parameters<AgentTool['run']>[1],
): Promise<ToolResult> {
  if (!tool) return { isError: true, content: `There is no tool named ${call.function.name}; the tools are ${WORKSPACE_TOOLS.map((t) => t.name).join(', ')}.` };
  if (!input) return { isError: true, content: `The arguments of ${call.function.name} must be a JSON object.` };
  return tool.run(input, context);
}

/** Events whose exit status 2 is handled by the agent itself (a block, or words for the model); on the others stderr is for the user. */
const AGENT_HANDLED: ReadonlySet<HookEvent> = new Set(['PreToolUse', 'PostToolUse', 'UserPromptSubmit']);

/**
 * The hooks of one turn: runs an event's matching commands with the common input, and records each
 * run on the session as it goes, `executing` then `completed` or `error`.
 */
class TurnHooks {
  constructor(
    private readonly agent: Agent,
    private readonly work: Work,
    private readonly history: ChatMessage[],
    private readonly config: HooksConfig,
  ) {}

  async fire(event: HookEvent, input: Record<string, unknown>, call?: ToolCall): Promise<HookRun | null> {
    const toolName = call?.function.name;
    const { commands, matchers } = selectCommands(this.config, event, toolName);
    if (commands.length === 0) return null;
    const startedAt = Date.now();
    const parallel = commands.length > 1;
    const base = {
      role: 'system' as const,
      hookEventName: event,
      ...(matchers.length ? { hookMatcher: matchers.join('|') } : {}),
      hookCommands: commands.map((c) => ({ command: c.command, ...(c.timeout !== undefined ? { timeout: c.timeout } : {}) })),
      hookStartTime: startedAt,
      ...(call ? { hookToolCallId: call.id } : {}),
      isParallelExecution: parallel,
      ...(parallel ? { parallelGroupId: randomUUID() } : {}),
    };
    await this.agent.record(this.work, {
      ...base,
      hookStatus: 'executing',
      hiddenFromUserViews: true,
      content: [{ type: 'text', text: `${event} hook running: ${commands.map((c) => c.command).join(', ')}` }],
    });
    const run = (await runHooks(this.config, event, { ...this.common(), ...input }, { workspace: this.agent.workspaceFor(this.work.sessionId), toolName }))!;
    const failed = run.results.some((r) => r.exitCode !== 0);
    const forUser = run.blocked && !AGENT_HANDLED.has(event);
    await this.agent.record(this.work, {
      ...base,
      hookStatus: failed ? 'error' : 'completed',
      hookResults: run.results.map((r) => ({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr })),
      hookEndTime: run.endedAt,
      hiddenFromUserViews: !forUser,
      content: [
        {
          type: 'text',
          text: forUser
            ? `${event} hook: ${run.blockReason}`
            : `${event} hook ${failed ? 'failed' : 'completed'} (${run.results.map((r) => `${r.command.command}: exit ${r.exitCode}${r.timedOut ? ', timed out' : ''}`).join('; ')})`,
        },
      ],
    });
    return run;
  }

  /** The input every event carries, with the transcript written out for hooks that read it. */
  private common(): Record<string, unknown> {
    const dir = join(this.agent.stateDir, 'transcripts');
    const transcript = join(dir, `${this.work.sessionId}.jsonl`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(transcript, this.history.map((m) => JSON.stringify(m)).join('\n') + (this.history.length ? '\n' : ''));
    const settings = this.work.session.sessionSettings ?? {};
    return {
      session_id: this.work.sessionId,
      cwd: this.agent.workspaceFor(this.work.sessionId),
      transcript_path: transcript,
      permission_mode: settings.interactionMode === 'spec' ? 'plan' : typeof settings.autonomyLevel === 'string' ? `auto-${settings.autonomyLevel}` : 'default',
    };
  }
}

/** The work a turn does with: its session and turn, the way to stop it, its hooks, model and policy. */
interface TurnContext {
  work: Work;
  signal: AbortSignal;
  hooks: TurnHooks;
  model: ModelApi;
  policy: AgentPolicy;
  /** The session's `interactionMode` is `spec`: plan, change nothing. */
  spec: boolean;
  /** The session's `autonomyLevel`: what the agent may do without a person confirming it. */
  autonomyLevel: SessionSettings['autonomyLevel'];
  /** The session's `reasoningEffort` (`specModeReasoningEffort` in spec mode): passed to the model where its API has a say. */
  reasoningEffort?: string;
  /** The organization's and the session's `toolApproval`: the calls a person must approve first. */
  approvalRules: Array<ApprovalRules | undefined>;
  /** The provider and API of the turn's model, reported with its usage to lock a session that has no lock yet; none when routed. */
  lock?: ModelLock;
  /** The session's `interactionMode` is `ask`: every call that can change something waits for a person's approval. */
  ask: boolean;
  /** The session's `autonomyMode` is `unattended`: nothing waits for a person; a call that would is refused instead. */
  unattended: boolean;
  /** The session's `enabledToolIds` and `disabledToolIds`: the tools offered, and those refused. */
  selection: ToolSelection;
  /** The tools of the organization's MCP servers offered this turn (none in spec mode), to the agent and its subagents. */
  mcpTools: McpTool[];
  /** The tools for the servers' resources and prompts (none when no server offers them). */
  mcpExtras: AgentTool[];
  /** The user's settings instructions and the project's AGENTS.md, read at the start of the turn. */
  memory: Memory;
  /** The skills of the repository, the user and the plugins: listed in the system prompt, read with the Skill tool. */
  skills: PluginSkill[];
  /** The custom subagents the Task tool may start by name. */
  agents: SubagentDefinition[];
  /** The AGENTS.md files of the folders the tools reach, each given once (a subagent has its own). */
  nested: NestedInstructions;
  /**
   * What the turn streams to the session's viewers as it comes (`message.delta`): the model's text, thinking and tool
   * calls' arguments, and the tools' output. None for a subagent. Best effort: its callbacks never block nor throw.
   */
  live?: Pick<DeltaPublisher, 'onText' | 'onThinking' | 'onToolInput' | 'onToolOutput'>;
}

/** What spec mode leaves the model (and its subagents): the tools that change nothing. */
const READ_ONLY_TOOLS: ReadonlySet<string> = new Set([
  'Read',
  'LS',
  'Glob',
  'Grep',
  'WebFetch',
  'WebSearch',
  'TodoWrite',
  'ListMcpResources',
  'ReadMcpResource',
  'GetMcpPrompt',
]);

/** In `ask` mode, why a call needs a person's approval: every call but the reads and Task (whose subagent's calls are asked each). */
function askModeApproval(turn: TurnContext, toolName: string): string | null {
  return turn.ask && !READ_ONLY_TOOLS.has(toolName) && toolName !== TASK_TOOL_NAME && toolName !== 'Skill'
    ? "the session's interactionMode is ask: every call that can change something needs a person's approval"
    : null;
}
const SPEC_MODE =
  ' This session is in spec mode: investigate with the read-only tools and answer with a specification and plan for the request (what to ' +
  'change, where, and how to verify it). Do not change files or run commands; the user will review the plan first.';

const COMPACT_SYSTEM = "You summarise a coding agent's conversation so that the agent can go on with its task from the summary alone.";
const COMPACT_REQUEST =
  'Summarise the conversation so far for yourself, to continue from it alone: what the user asked (their words where they matter), what has ' +
  'been done (files read, created and changed, commands run and what they showed), the decisions made and why, and what remains to do. ' +
  'Be complete about facts and concise in words. Answer with the summary only.';
const COMPACTED_PREFIX = 'The conversation so far was compacted; this is your summary of it. Go on with the task from here.';

/** The subagent of the Task tool that has no definition of its own: the agent's tools, and its task alone. */
const GENERAL_SUBAGENT = 'general-purpose';
const TASK_TOOL_NAME = 'Task';

/** The tool that starts a subagent (run by the agent itself, not a workspace tool); the custom subagents are offered by name. */
function taskTool(agents: readonly SubagentDefinition[]) {
  return {
    name: TASK_TOOL_NAME,
    description:
      'Starts a subagent with a fresh conversation to do a self-contained part of the task (a search across the code, an investigation, a well-defined ' +
      'change) with the same workspace tools, and returns its final report. Give it everything it needs in the prompt: it sees nothing of this conversation.' +
      (agents.length ? ` Choose subagent_type for a specialised subagent:\n${agents.map((agent) => `- ${agent.name}: ${agent.description}`).join('\n')}` : ''),
    parameters: {
      type: 'object',
      properties: {
        description: { type: 'string', description: 'A short (3-5 word) description of the task.' },
        prompt: { type: 'string', description: 'The whole task for the subagent, and what its report should contain.' },
        ...(agents.length
          ? {
              subagent_type: {
                type: 'string',
                enum: [GENERAL_SUBAGENT, ...agents.map((agent) => agent.name)],
                description: `Which subagent; ${GENERAL_SUBAGENT} when none fits.`,
              },
            }
          : {}),
      },
      required: ['description', 'prompt'],
      additionalProperties: false,
    },
  };
}

/** The path a file tool worked on (its file, or the folder it listed or searched), or null for other tools. */
function pathOf(tool: string, input: Record<string, unknown>): string | null {
  const key = tool === 'Read' || tool === 'Create' || tool === 'Edit' ? 'file_path' : tool === 'LS' || tool === 'Glob' || tool === 'Grep' ? 'path' : null;
  return key && typeof input[key] === 'string' ? input[key] : null;
}

/** Claude Code's names of the tools a subagent definition may list, as this agent names them. */
const TOOL_ALIASES: Readonly<Record<string, string>> = { bash: 'Execute', write: 'Create', multiedit: 'Edit' };

/** Whether a subagent definition's `tools` list this tool (by our name or Claude Code's; an MCP tool by its full name). */
function definesTool(tools: readonly string[], name: string): boolean {
  return tools.some((listed) => (TOOL_ALIASES[listed.toLowerCase()] ?? listed).toLowerCase() === name.toLowerCase());
}

/**
 * Stored messages as the model's conversation. System messages (notes and hook records) are for people,
 * and what subagents did (hidden from user views) came back to the agent as their Task results.
 */
export function toChatHistory(stored: Message[]): ChatMessage[] {
  const messages = stored.filter((m) => m.hiddenFromUserViews !== true);

  const answered = new Set(messages.flatMap((m) => (m.role === 'tool' ? m.content.flatMap((b) => (b.type === 'tool_result' ? [b.toolUseId] : [])) : [])));
  const called = new Set<string>();
  const history: ChatMessage[] = [];
  for (const message of messages) {
    if (message.role === 'user') history.push(userMessage(message));
    else if (message.role === 'assistant') {
      const text = message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n');
      const calls: ToolCall[] = message.content.flatMap((b) =>
        b.type === 'tool_use' && answered.has(b.id)
          ? [{ id: b.id, type: 'function' as const, function: { name: b.name, arguments: JSON.stringify(b.input) } }]
          : [],
      );
      calls.forEach((c) => called.add(c.id));
      const thinking = message.content.flatMap((b) =>
        b.type === 'thinking' && b.signatureProvider === 'anthropic' && b.signature
          ? [{ thinking: b.thinking, signature: b.signature }]
          : b.type === 'redacted_thinking'
            ? [{ thinking: '', signature: '', redacted: b.data }]
            : [],
      );
      if (text || calls.length)
        history.push({ role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}), ...(thinking.length ? { thinking } : {}) });
    } else if (message.role === 'tool') {
      for (const block of message.content) {
        if (block.type === 'tool_result' && called.has(block.toolUseId))
          history.push({ role: 'tool', tool_call_id: block.toolUseId, content: resultText(block.content), ...(block.isError ? { isError: true } : {}) });
      }
    }
  }
  return history;
}

/** A tool result's content, as the text the model gets. */
function resultText(content: Extract<ContentBlock, { type: 'tool_result' }>['content']): string {
  if (typeof content === 'string') return content;
  return (content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('\n');
}

/** What the model reads of a user message: its text, and a line for each attachment it cannot see. */
/** A user message for the model: its text and text files, and its images beside them. */
function userMessage(message: Message): Extract<ChatMessage, { role: 'user' }> {
  const images = message.content.flatMap((block) => (block.type === 'image' ? [{ mediaType: block.source.mediaType, data: block.source.data }] : []));
  const documents = message.content.flatMap((block): ChatDocument[] =>
    block.type === 'document' && block.source.type === 'base64'
      ? [
          {
            mediaType: 'application/pdf',
            data: block.source.data,
            ...(block.source.name ? { name: block.source.name } : {}),
            ...(block.source.parsedData ? { parsedText: block.source.parsedData } : {}),
          },
        ]
      : [],
  );
  return { role: 'user', content: userText(message), ...(images.length > 0 ? { images } : {}), ...(documents.length > 0 ? { documents } : {}) };
}

/**
 * A model that does not read PDFs itself (every model but those of the Messages API, and one marked `noImageSupport`): each
 * PDF of the conversation is given as its text instead, the text its sender extracted (`parsedData`) or else the agent's
 * (read once per agent process: `pdfTexts`).
 */
function readingDocuments(model: ModelApi, native: boolean, pdfTexts: PdfTexts): ModelApi {
  if (native) return model;
  const textOf = (document: ChatDocument): Promise<string> => {
    const name = document.name ? ` ${document.name}` : '';
    return document.parsedText !== undefined
      ? Promise.resolve(`[the attached PDF${name}, as text]\n${document.parsedText}`)
      : pdfTexts.of(document.data).then(
          ({ pages, text: body }) => `[the attached PDF${name} (${pages} ${pages === 1 ? 'page' : 'pages'}), as text]\n${body || '(no text in it)'}`,
          (error: Error) => `[a PDF is attached${name}, and its text cannot be read: ${error.message}]`,
        );
  };
  const asText = async (message: ChatMessage): Promise<ChatMessage> => {
    if (message.role !== 'user' || !message.documents?.length) return message;
    const { documents, ...rest } = message;
    return { ...rest, content: [message.content, ...(await Promise.all(documents.map(textOf)))].filter(Boolean).join('\n\n') };
  };
  return {
    provider: model.provider,
    config: model.config,
    complete: async (messages, tools, options) => model.complete(await Promise.all(messages.map(asText)), tools, options),
  };
}

/**
 * A model that takes no images (a custom model's `noImageSupport`): each image of the conversation is described
 * in words instead (its type and size), and never sent.
 */
function describingImages(model: ModelApi): ModelApi {
  const describe = (message: ChatMessage): ChatMessage => {
    if ((message.role !== 'user' && message.role !== 'tool') || !message.images?.length) return message;
    const notes = message.images.map(
      (image) =>
        `[an image is attached (${image.mediaType}, ${Math.round((image.data.length * 3) / 4 / 1024)} KB); ${model.config.model} takes no images ` +
        "(the organization's noImageSupport), so it is described, not shown]",
    );
    const content = [message.content, ...notes].filter(Boolean).join('\n\n');
    return message.role === 'user' ? { role: 'user', content } : { ...message, content, images: undefined };
  };
  return { provider: model.provider, config: model.config, complete: (messages, tools, options) => model.complete(messages.map(describe), tools, options) };
}

/** Whether the organization marks this model as one that takes no images. */
function takesNoImages(policy: AgentPolicy, modelId: string): boolean {
  return policy.customModels.some((model) => model.id === modelId && model.noImageSupport === true);
}

/** The text of a user message: its text blocks and text files (images go beside it, see userMessage). */
function userText(message: Message): string {
  return message.content
    .map((block) => {
      if (block.type === 'text') return block.text;
      if (block.type === 'document') {
        const { source } = block;
        // A PDF goes beside the text (userMessage): to the model itself, or as its text.
        return source.type === 'text' ? `[attached file ${source.name ?? ''}]\n${source.data}` : '';
      }
      return '';
    })
    .filter(Boolean)
    .join('\n\n');
}

function assistantMessage(model: string, answer: ModelAnswer): AgentMessage {
  const { text, toolCalls: calls, reasoning } = answer;
  const content: AgentMessage['content'] = [];
  for (const block of answer.thinking ?? [])
    content.push(
      block.redacted !== undefined
        ? { type: 'redacted_thinking', data: block.redacted }
        : { type: 'thinking', thinking: block.thinking, signature: block.signature, signatureProvider: 'anthropic' },
    );
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning.content, signature: '', signatureProvider: 'generic-chat-completion-api' });
  if (text) content.push({ type: 'text', text });
  for (const call of calls) {
    let input: unknown = {};
    try {
      input = JSON.parse(call.function.arguments || '{}');
    } catch {
      input = { arguments: call.function.arguments };
    }
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: isJsonObject(input) ? input : { value: input },
    });
  }
  if (content.length === 0) content.push({ type: 'text', text: '(no answer)' });
  return {
    role: 'assistant',
    content,
    modelId: model,
    ...(reasoning ? { chatCompletionReasoningField: reasoning.field, chatCompletionReasoningContent: reasoning.content } : {}),
  };
}

function subagentPrompt(workspace: string, memory: Memory, definition?: SubagentDefinition): string {
  return withMemory(
    `You are a subagent of a coding agent, working in the folder ${workspace} on one task it gave you. Use the tools to read, search, create and ` +
      'edit files and run commands there. When the task is done, answer with a concise report for the agent (what you found or changed, with ' +
      'file paths), without tool calls: it is all the agent will see of your work.' +
      (definition?.prompt ? `\n\n# You are the ${definition.name} subagent\n\n${definition.prompt}` : ''),
    memory,
  );
}

function systemPrompt(workspace: string, memory: Memory): string {
  return withMemory(
    `You are a coding agent working in the folder ${workspace}. Use the tools to read, search, create and edit files and to run commands ` +
      'there. Commands and files outside the workspace, and commands the organization forbids, are refused. When the task is done, ' +
      'answer with a short summary of what you did, without tool calls.',
    memory,
  );
}

/** The skills offered this turn, as the system prompt lists them (nothing when there are none). */
function skillsPrompt(skills: readonly PluginSkill[]): string {
  if (skills.length === 0) return '';
  return (
    '\n\n# Skills\nThese skills hold instructions for particular tasks. When a task matches one, load it with the Skill tool first and follow it.\n' +
    skills.map((skill) => `- ${skill.name}: ${skill.description}`).join('\n')
  );
}

/** The computer's hooks, then the plugins' hooks, for each event. */
function withPluginHooks(own: HooksConfig, plugins: HooksConfig): HooksConfig {
  const merged: HooksConfig = { ...own };
  for (const [event, entries] of Object.entries(plugins) as Array<[HookEvent, NonNullable<HooksConfig[HookEvent]>]>) {
    merged[event] = [...(merged[event] ?? []), ...entries];
  }
  return merged;
}
