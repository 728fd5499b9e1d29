export { SessionEntity } from './session.entity';
export { MessageEntity } from './message.entity';
export { TokenUsageDailyEntity } from './token-usage.entity';
export { AgentPresenceEntity } from './agent-presence.entity';
export { ToolApprovalEntity } from './tool-approval.entity';
