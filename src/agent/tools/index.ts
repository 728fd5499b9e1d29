import { applyPatchTool } from './apply-patch';
import { createTool } from './create';
import { editTool } from './edit';
import { executeTool } from './execute';
import { globTool } from './glob';
import { grepTool } from './grep';
import { lsTool } from './ls';
import { readTool } from './read';
import { AgentTool } from './tool';

export type { AgentTool, CommandPolicy, ToolContext, ToolPolicy, ToolResult } from './tool';
export { checkCommand } from './command-policy';

/** The tools that work in the session's workspace, in the order the model is told about them. */
export const WORKSPACE_TOOLS: AgentTool[] = [readTool, lsTool, globTool, grepTool, createTool, editTool, applyPatchTool, executeTool];

/** The workspace tool with this exact name, if there is one. */
export const toolNamed = (name: string): AgentTool | undefined => WORKSPACE_TOOLS.find((tool) => tool.name === name);
