import type { SandboxSettings } from '../sandbox/sandbox';

export interface CommandPolicy {
  commandAllowlist: string[];
  commandDenylist: string[];
  commandBlocklist: string[];
}
/** The parts of the organization's agent policy the tools obey. */
export interface ToolPolicy extends CommandPolicy {
  sandbox?: SandboxSettings;
  networkPolicy?: { allowedIps: string[] };
}
export interface ToolContext {
  workspace: string;
  policy: ToolPolicy;
  signal: AbortSignal;
}
export interface ToolResult {
  content: string;
  isError: boolean;
}
export interface AgentTool {
  name: string; // exactly: Read, LS, Glob, Grep, Create, Edit, ApplyPatch, Execute
  description: string; // for the model
  parameters: Record<string, unknown>; // JSON Schema of the input (OpenAI function-calling `parameters`)
  run(input: Record<string, unknown>, context: ToolContext): Promise<ToolResult>;
}
