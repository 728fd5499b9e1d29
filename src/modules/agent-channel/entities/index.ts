export { AgentPresenceEntity } from './agent-presence.entity';
export { ToolApprovalEntity } from './tool-approval.entity';
