import { defineTool, requiredString, ToolError } from '../tools/common';
import type { AgentTool } from '../tools/tool';
import type { McpConnections, McpPrompt } from './mcp-connections';

/**
 * The tools for what MCP servers offer beside tools: `ListMcpResources` and `ReadMcpResource` for the servers that
 * offer resources, `GetMcpPrompt` for their prompts (listed in its description). None when no server offers either.
 */
export function mcpExtraTools(mcp: McpConnections, resourceServers: readonly string[], prompts: readonly McpPrompt[]): AgentTool[] {
  const tools: AgentTool[] = [];
  const knownServer = (server: string) => {
    if (!resourceServers.includes(server)) throw new ToolError(`The MCP server ${server} offers no resources; those that do: ${resourceServers.join(', ')}.`);
  };
  if (resourceServers.length > 0) {
    tools.push(
      defineTool({
        name: 'ListMcpResources',
        description: `Lists the resources (documents, data) an MCP server offers, by URI. Servers with resources: ${resourceServers.join(', ')}.`,
        parameters: {
          type: 'object',
          properties: { server: { type: 'string', enum: [...resourceServers] } },
          required: ['server'],
          additionalProperties: false,
        },
        async run(input) {
          const server = requiredString(input, 'server', { nonEmpty: true });
          knownServer(server);
          return mcp.listResources(server);
        },
      }),
      defineTool({
        name: 'ReadMcpResource',
        description: 'Reads one resource of an MCP server by its URI (from ListMcpResources).',
        parameters: {
          type: 'object',
          properties: { server: { type: 'string', enum: [...resourceServers] }, uri: { type: 'string' } },
          required: ['server', 'uri'],
          additionalProperties: false,
        },
        async run(input) {
          const server = requiredString(input, 'server', { nonEmpty: true });
          knownServer(server);
          return mcp.readResource(server, requiredString(input, 'uri', { nonEmpty: true }));
        },
      }),
    );
  }
  if (prompts.length > 0) {
    tools.push(
      defineTool({
        name: 'GetMcpPrompt',
        description:
          'Gets a prompt an MCP server offers (instructions for a task), filled with its arguments. The prompts:\n' +
          prompts.map((p) => `- ${p.server}/${p.name}(${p.arguments.join(', ')}): ${p.description}`).join('\n'),
        parameters: {
          type: 'object',
          properties: {
            server: { type: 'string', enum: [...new Set(prompts.map((p) => p.server))] },
            name: { type: 'string' },
            arguments: { type: 'object', additionalProperties: { type: 'string' }, description: 'The prompt’s arguments by name.' },
          },
          required: ['server', 'name'],
          additionalProperties: false,
        },
        async run(input) {
          const server = requiredString(input, 'server', { nonEmpty: true });
          const name = requiredString(input, 'name', { nonEmpty: true });
          if (!prompts.some((p) => p.server === server && p.name === name)) throw new ToolError(`The MCP server ${server} offers no prompt named ${name}.`);
          const given = input.arguments;
          if (given !== undefined && (typeof given !== 'object' || given === null || Array.isArray(given)))
            throw new ToolError('"arguments" must be an object of strings');
          const args = Object.fromEntries(Object.entries((given ?? {}) as Record<string, unknown>).map(([key, value]) => [key, String(value)]));
          return mcp.getPrompt(server, name, args);
        },
      }),
    );
  }
  return tools;
}
