export { AgentChannelModule } from './agent-channel.module';
export { AgentWorkService } from './agent-work.service';
export { WorkClaims } from './work-claims.service';
