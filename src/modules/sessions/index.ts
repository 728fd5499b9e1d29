export { SessionsModule } from './sessions.module';
export { SessionsService } from './sessions.service';
export { AgentWorkService } from './agent-work.service';
export type { SessionView, MessageView } from './domain/views';
export { SessionStatus } from './domain/session-status';
export { MessageRole } from './domain/message';
export * from './events';
export { ComputerDirectory } from './ports/computer-directory';
export { SessionDefaults } from './ports/session-defaults';
