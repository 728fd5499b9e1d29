import { ToolSelection } from '../tools/tool-selection';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { agentAllowedHosts, outboundFetch } from '../net/outbound';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { AgentPolicy } from '../../contract/agent-channel';
import { Sandbox } from '../sandbox/sandbox';
import { shellQuote } from '../tools/shell-syntax';
import { ToolResult } from '../tools/tool';
import { ListedTool, McpServerDefinition, McpTool, offeredTools, resultText, usableMcpServers } from './mcp-tools';

/** How long one MCP request may take with no progress reported (the SDK's default is a minute; tools can work longer). */
const REQUEST_TIMEOUT_MS = 10 * 60_000;
/** How long connecting to a server (starting it, `initialize`) and listing its tools may take. */
const CONNECT_TIMEOUT_MS = 30_000;
/** Characters of a stdio server's stderr kept to explain why it failed. */
const STDERR_TAIL = 2_000;

/** How a stdio server is started, as the platform's launch endpoint answers (env in plain text). */
interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

interface Connection {
  /** What the connection was made from: a new one is made when the policy's definition (or a stdio server's launch) changes. */
  key: string;
  client: Client;
  closed: boolean;
  stderr: { text: string };
  cleanup: () => Promise<void>;
}

/** The MCP tools of a turn, and why a server offers none (each a sentence for the session). */
export interface McpToolset {
  tools: McpTool[];
  problems: string[];
  /** The servers of the turn that offer resources, and the prompts they offer (read with the MCP resource and prompt tools). */
  resources?: string[];
  prompts?: McpPrompt[];
}

/** A prompt an MCP server offers: a template of messages, filled with its arguments. */
export interface McpPrompt {
  server: string;
  name: string;
  description: string;
  arguments: string[];
}

export interface McpConnectionsOptions {
  /** The platform's base URL and the agent token: the MCP relay and the launch endpoint are on the agent channel. */
  platformUrl: string;
  token: string;
  workspace: string;
  log: (line: string) => void;
}

/**
 * The agent's connections to the organization's MCP servers, kept for the life of the agent process
 * and reused from turn to turn; remade when the policy's definition of a server changes or the
 * connection died. HTTP servers are reached through the platform's MCP relay (which holds their
 * header values); stdio servers are started on this computer from the platform's launch endpoint,
 * inside the sandbox when the organization requires one, and never outside it then.
 */
export class McpConnections {
  private readonly connections = new Map<string, Connection>();
  /** How to reach the plugins' servers of the current turn, by name (they need no launch from the platform, nor the relay). */
  private local = new Map<string, Launch | Direct>();
  private readonly sandbox = new Sandbox({ nested: process.env.AGENT_NESTED_SANDBOX === '1' });

  constructor(private readonly options: McpConnectionsOptions) {}

  /**
   * Connects to every server the policy lets the agent use (closing those it no longer does) and
   * lists their tools, less those the session's `selection` keeps from the agent. A server that fails offers no tools and says why; it never fails the turn.
   */
  async toolset(policy: AgentPolicy, selection = new ToolSelection({}), signal?: AbortSignal, local: readonly LocalMcpServer[] = []): Promise<McpToolset> {
    // The plugins' servers beside the organization's, under the same mcpPolicy; a name the organization uses is its.
    const own = usableMcpServers(policy);
    // Never a plugin's server in place of the organization's: it would take that server's trust (allowedTools, autonomy by name).
    const plugins = local.filter((server) => !policy.mcpServers.some((o) => o.name === server.name));
    const extra = usableMcpServers({ mcpPolicy: policy.mcpPolicy, mcpServers: plugins.map(asDefinition) });
    this.local = new Map(
      plugins.map((server) => [
        server.name,
        server.transport === 'http' ? { url: server.url, headers: server.headers } : { command: server.command, args: server.args, env: server.env },
      ]),
    );
    const servers = [...own, ...extra];
    for (const name of [...this.connections.keys()]) if (!servers.some((server) => server.name === name)) await this.drop(name);
    // Connected side by side (one slow server does not hold up the others), offered in the policy's order.
    const outcomes = await Promise.all(
      servers.map((server) =>
        this.listed(server, policy, signal).then(
          (listed) => ({ listed }),
          (error: Error) => ({ error }),
        ),
      ),
    );
    const taken = new Set<string>();
    const toolset: McpToolset = { tools: [], problems: [] };
    // Interrupted or stopped while connecting: no tools are needed, and no server is to blame.
    if (signal?.aborted) return toolset;
    for (const [index, server] of servers.entries()) {
      const outcome = outcomes[index];
      if ('listed' in outcome) {
        toolset.tools.push(...offeredTools(server, outcome.listed, selection, taken));
        await this.extras(server.name, toolset);
        continue;
      }
      const stderr = this.connections.get(server.name)?.stderr.text.trim();
      await this.drop(server.name);
      const why = `${outcome.error.message}${stderr ? `; its stderr ends: ${stderr.slice(-500)}` : ''}`;
      this.options.log(`MCP server ${server.name} is unavailable: ${why}`);
      toolset.problems.push(`The MCP server ${server.name} is unavailable for this turn, so its tools are not offered: ${why}`);
    }
    return toolset;
  }

  /** Calls the tool on its server; a failure is the tool's result, never an exception. */
  async call(tool: McpTool, input: Record<string, unknown>, signal: AbortSignal): Promise<ToolResult> {
    const connection = this.connections.get(tool.server);
    if (!connection || connection.closed)
      return { isError: true, content: `The MCP server ${tool.server} is not connected any more; try again in the next turn.` };
    try {
      const result = await connection.client.callTool({ name: tool.tool, arguments: input }, undefined, {
        signal,
        timeout: REQUEST_TIMEOUT_MS,
        resetTimeoutOnProgress: true,
      });
      return { isError: result.isError === true, content: resultText(result.content, result.structuredContent ?? result.toolResult) };
    } catch (error) {
      if (signal.aborted) return { isError: true, content: 'The call was aborted: the turn was interrupted or stopped.' };
      return { isError: true, content: `The MCP server ${tool.server} failed the call: ${(error as Error).message}` };
    }
  }

  /** Whether the server offers resources, and its prompts, added to the toolset; a server that fails to list them offers none. */
  private async extras(name: string, toolset: McpToolset): Promise<void> {
    const client = this.connections.get(name)?.client;
    const capabilities = client?.getServerCapabilities();
    if (!client || !capabilities) return;
    if (capabilities.resources) (toolset.resources ??= []).push(name);
    if (!capabilities.prompts) return;
    try {
      const { prompts } = await client.listPrompts(undefined, { timeout: CONNECT_TIMEOUT_MS });
      for (const prompt of prompts) {
        (toolset.prompts ??= []).push({
          server: name,
          name: prompt.name,
          description: prompt.description ?? '',
          arguments: (prompt.arguments ?? []).map((argument) => argument.name),
        });
      }
    } catch (error) {
      this.options.log(`MCP server ${name} did not list its prompts: ${(error as Error).message}`);
    }
  }

  /** The resources a server offers (`uri`, name, description), or what went wrong, as text for the model. */
  async listResources(server: string): Promise<ToolResult> {
    const client = this.connected(server);
    if (!client) return { isError: true, content: `The MCP server ${server} is not connected, or offers no resources.` };
    try {
      const { resources } = await client.listResources(undefined, { timeout: REQUEST_TIMEOUT_MS });
      const lines = resources.map((r) => `- ${r.uri}${r.name ? ` (${r.name})` : ''}${r.description ? `: ${r.description}` : ''}`);
      return { isError: false, content: lines.length ? lines.join('\n') : `The MCP server ${server} lists no resources.` };
    } catch (error) {
      return { isError: true, content: `The MCP server ${server} failed to list its resources: ${(error as Error).message}` };
    }
  }

  /** A resource's text contents (binary ones named, not given). */
  async readResource(server: string, uri: string): Promise<ToolResult> {
    const client = this.connected(server);
    if (!client) return { isError: true, content: `The MCP server ${server} is not connected, or offers no resources.` };
    try {
      const { contents } = await client.readResource({ uri }, { timeout: REQUEST_TIMEOUT_MS });
      const parts = contents.map((content) =>
        'text' in content && typeof content.text === 'string' ? content.text : `[${content.uri}: binary content (${content.mimeType ?? 'no type'}), not shown]`,
      );
      return { isError: false, content: parts.join('\n\n') || '(the resource is empty)' };
    } catch (error) {
      return { isError: true, content: `The MCP server ${server} failed to read ${uri}: ${(error as Error).message}` };
    }
  }

  /** A prompt filled with its arguments, as the text of its messages. */
  async getPrompt(server: string, name: string, args: Record<string, string>): Promise<ToolResult> {
    const client = this.connected(server);
    if (!client) return { isError: true, content: `The MCP server ${server} is not connected, or offers no prompts.` };
    try {
      const { messages } = await client.getPrompt({ name, arguments: args }, { timeout: REQUEST_TIMEOUT_MS });
      const text = messages.map((message) =>
        message.content.type === 'text' ? `${message.role}: ${message.content.text}` : `${message.role}: [${message.content.type}]`,
      );
      return { isError: false, content: text.join('\n\n') || '(the prompt is empty)' };
    } catch (error) {
      return { isError: true, content: `The MCP server ${server} failed to give the prompt ${name}: ${(error as Error).message}` };
    }
  }

  /** A prompt's messages as one text, for a user who typed it as a command; or why it cannot be given. */
  async promptText(server: string, name: string, args: Record<string, string>): Promise<{ text: string } | { error: string }> {
    const client = this.connected(server);
    if (!client) return { error: `the MCP server ${server} is not connected` };
    try {
      const { messages } = await client.getPrompt({ name, arguments: args }, { timeout: REQUEST_TIMEOUT_MS });
      const text = messages.flatMap((message) => (message.content.type === 'text' ? [message.content.text] : [])).join('\n\n');
      return text ? { text } : { error: 'the prompt has no text' };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }

  private connected(server: string): Client | null {
    const connection = this.connections.get(server);
    return connection && !connection.closed ? connection.client : null;
  }

  /** Closes every connection (stopping the stdio servers). */
  async close(): Promise<void> {
    await Promise.all([...this.connections.keys()].map((name) => this.drop(name)));
  }

  /** The server's tools, on a connection made from its current definition. */
  private async listed(server: McpServerDefinition, policy: AgentPolicy, signal?: AbortSignal): Promise<ListedTool[]> {
    const local = this.local.get(server.name);
    const launch = server.transport === 'stdio' ? (local ?? (await this.launch(server.name, signal))) : (local ?? null);
    const key = JSON.stringify(
      server.transport === 'http' && !local ? { url: server.url } : { launch, sandbox: policy.sandbox, networkPolicy: policy.networkPolicy },
    );
    let connection = this.connections.get(server.name);
    if (connection && (connection.closed || connection.key !== key)) {
      await this.drop(server.name);
      connection = undefined;
    }
    if (!connection) {
      connection = await this.connect(server.name, key, launch, policy, signal);
      this.connections.set(server.name, connection);
    }
    const tools: ListedTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await connection.client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: CONNECT_TIMEOUT_MS, signal });
      tools.push(...page.tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })));
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  private async connect(name: string, key: string, launch: Launch | Direct | null, policy: AgentPolicy, signal?: AbortSignal): Promise<Connection> {
    const stderr = { text: '' };
    const { transport, cleanup } = !launch
      ? this.relayTransport(name)
      : 'url' in launch
        ? this.directTransport(launch, policy)
        : await this.stdioTransport(launch, policy, stderr);
    const client = new Client({ name: 'agent-platform-agent', version: '1' });
    const connection: Connection = { key, client, closed: false, stderr, cleanup };
    client.onclose = () => (connection.closed = true);
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS, signal });
    } catch (error) {
      await client.close().catch(() => undefined);
      await cleanup();
      // What a server that failed to start said is the best clue to why.
      const said = stderr.text.trim();
      throw new Error(`${(error as Error).message}${said ? `; its stderr ends: ${said.slice(-500)}` : ''}`);
    }
    return connection;
  }

  /** Through the platform's MCP relay, with the agent token: the server's header values stay on the platform. */
  private relayTransport(name: string): { transport: Transport; cleanup: () => Promise<void> } {
    const url = new URL(`${this.options.platformUrl}/api/v0/agent/mcp/${encodeURIComponent(name)}`);
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${this.options.token}` }, redirect: 'error' },
    });
    return { transport, cleanup: async () => undefined };
  }

  /**
   * Straight to a plugin's HTTP server, with the plugin's headers: every request under the rules of the agent's own
   * requests (outboundFetch: public addresses only unless the operator names the host in AGENT_WEB_ALLOWED_HOSTS,
   * the organization's `networkPolicy.allowedIps`, and `sandbox.network.allowedDomains` under `sandbox.enabled`; no
   * redirects). The relay is for the organization's servers, whose secrets stay on the platform.
   */
  private directTransport(direct: Direct, policy: AgentPolicy): { transport: Transport; cleanup: () => Promise<void> } {
    const transport = new StreamableHTTPClientTransport(new URL(direct.url), {
      fetch: outboundFetch(policy, agentAllowedHosts()),
      requestInit: { headers: direct.headers },
    });
    return { transport, cleanup: async () => undefined };
  }

  /**
   * Starts the server as a child of the agent in the workspace, with a minimal environment (the SDK's
   * short list: HOME, PATH, SHELL, TERM, USER, LOGNAME) and the server's own `env`: never the agent's
   * token or model key. Confined as commands are (the sandbox under `sandbox.enabled`, the network under
   * `networkPolicy.allowedIps`), and not started at all on a computer that cannot confine it.
   */
  private async stdioTransport(launch: Launch, policy: AgentPolicy, stderr: { text: string }): Promise<{ transport: Transport; cleanup: () => Promise<void> }> {
    const { workspace } = this.options;
    let params = { command: launch.command, args: launch.args, env: launch.env };
    let cleanup = async () => undefined as void;
    const line = [launch.command, ...launch.args].map(shellQuote).join(' ');
    const confined = await this.sandbox.confine(line, policy, workspace);
    if (confined) {
      params = { command: confined.file, args: confined.args, env: { ...launch.env, ...confined.env } };
      cleanup = confined.cleanup;
    }
    const transport = new StdioClientTransport({ ...params, cwd: workspace, stderr: 'pipe' });
    transport.stderr?.on('data', (chunk: Buffer) => (stderr.text = (stderr.text + chunk.toString()).slice(-STDERR_TAIL)));
    return { transport, cleanup };
  }

  /** How to start a stdio server, from the platform (the one place its env values are revealed). */
  private async launch(name: string, signal?: AbortSignal): Promise<Launch> {
    const response = await fetch(`${this.options.platformUrl}/api/v0/agent/mcp/${encodeURIComponent(name)}/launch`, {
      headers: { authorization: `Bearer ${this.options.token}`, accept: 'application/json' },
      signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(CONNECT_TIMEOUT_MS)]) : AbortSignal.timeout(CONNECT_TIMEOUT_MS),
    });
    const body = (await response.json().catch(() => ({}))) as Partial<Launch> & { detail?: string };
    if (!response.ok) throw new Error(`the platform refused to say how to start it (${response.status}: ${body.detail ?? 'no detail'})`);
    return { command: String(body.command), args: body.args ?? [], env: body.env ?? {} };
  }

  private async drop(name: string): Promise<void> {
    const connection = this.connections.get(name);
    if (!connection) return;
    this.connections.delete(name);
    await connection.client.close().catch(() => undefined);
    await connection.cleanup().catch(() => undefined);
  }
}

/** An MCP server defined on the computer (a plugin's), not by the organization. */
export type LocalMcpServer = { name: string } & (
  { transport: 'stdio'; command: string; args: string[]; env: Record<string, string> } | { transport: 'http'; url: string; headers: Record<string, string> }
);

/** How to reach a local HTTP server: directly, with its own headers (a plugin's, not secrets of the organization). */
interface Direct {
  url: string;
  headers: Record<string, string>;
}

/** A local server as the policy's definitions are shaped, for the same rules (mcpPolicy, tool names, selection, autonomy by URL). */
function asDefinition(server: LocalMcpServer): McpServerDefinition {
  return (
    server.transport === 'http'
      ? { name: server.name, transport: 'http', url: server.url }
      : { name: server.name, transport: 'stdio', command: server.command, args: server.args }
  ) as McpServerDefinition;
}
