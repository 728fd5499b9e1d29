import type { SessionSettings } from '../../contract/agent-channel';

/**
 * Which tools a session lets its agent use: `enabledToolIds`, when given, lists the only ones (empty:
 * none), and `disabledToolIds` takes tools away, built-in and MCP alike. A built-in tool is named as the
 * model knows it (`Read`, `Execute`, `Task`; case aside); an MCP tool by its offered name
 * (`mcp__github__create_issue`) or as `server/tool` (`github/create_issue`).
 */
export class ToolSelection {
  private readonly enabled: ReadonlySet<string> | null;
  private readonly disabled: ReadonlySet<string>;

  constructor(settings: Pick<SessionSettings, 'enabledToolIds' | 'disabledToolIds'>) {
    this.enabled = Array.isArray(settings.enabledToolIds) ? new Set(settings.enabledToolIds.map(normalized)) : null;
    this.disabled = new Set((settings.disabledToolIds ?? []).map(normalized));
  }

  /** Why the session keeps this tool from the agent, in words for the model, or null when it may be used. */
  refusal(name: string, mcp?: { server: string; tool: string }): string | null {
    const ids = [name, ...(mcp ? [`${mcp.server}/${mcp.tool}`] : [])].map(normalized);
    if (ids.some((id) => this.disabled.has(id))) return `${name} is disabled in this session (its disabledToolIds); it was not run.`;
    if (this.enabled && !ids.some((id) => this.enabled!.has(id))) {
      return `${name} is not among the tools this session enables (its enabledToolIds); it was not run.`;
    }
    return null;
  }

  allows(name: string, mcp?: { server: string; tool: string }): boolean {
    return this.refusal(name, mcp) === null;
  }
}

/** Ids compare without case: `read` and `Read` name the same tool, as people write them either way. */
function normalized(id: string): string {
  return id.toLowerCase();
}
