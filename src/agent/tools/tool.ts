import type { AgentPolicy } from '../../contract/agent-channel';
import type { ChatImage } from '../models/model-api';

export type CommandPolicy = Pick<AgentPolicy, 'commandAllowlist' | 'commandDenylist' | 'commandBlocklist'>;
/** The parts of the organization's agent policy the tools obey; without a sandbox or a network policy, none applies. */
export type ToolPolicy = CommandPolicy & Partial<Pick<AgentPolicy, 'sandbox' | 'networkPolicy' | 'includeCoAuthoredByAgent' | 'enableAgentShield'>>;
export interface ToolContext {
  workspace: string;
  policy: ToolPolicy;
  signal: AbortSignal;
  /** The output as it comes, for the session's viewers (Execute's stdout and stderr); best effort, it never throws. */
  onOutput?: (text: string) => void;
}
export interface ToolResult {
  content: string;
  isError: boolean;
  /** Images for the model beside the text (an image file Read read): never stored in the session, only its description. */
  images?: ChatImage[];
}
export interface AgentTool {
  name: string; // exactly: Read, LS, Glob, Grep, Create, Edit, ApplyPatch, Execute
  description: string; // for the model
  parameters: Record<string, unknown>; // JSON Schema of the input (OpenAI function-calling `parameters`)
  run(input: Record<string, unknown>, context: ToolContext): Promise<ToolResult>;
}
