import { Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { AgentController } from './agent.controller';
import { AgentPresence } from './agent-presence';
import { DeltaRate } from './delta-rate';
import { TurnDeltas } from './turn-deltas.service';
import { AgentWorkService } from './agent-work.service';
import { WorkClaims } from './work-claims.service';
import { WorkQueue } from './work-queue';
import { HistoryImportService } from './history-import.service';
import { LongPollSlots } from './long-poll-slots';
import { SessionPolicy } from './session-policy';
import { SessionsController } from './sessions.controller';
import { SessionsRepository } from './sessions.repository';
import { SessionShapes } from './session-rows';
import { TurnsRepository } from './turns.repository';
import { ToolApprovalsRepository } from './tool-approvals.repository';
import { TokenUsageRepository } from './token-usage.repository';
import { AgentPresenceRepository } from './agent-presence.repository';
import { SessionReader } from './session-reader';
import { TokenUsageReader } from './token-usage-reader';
import { HeadlessSessions } from './headless-sessions.service';
import { SessionsService } from './sessions.service';
import { SessionAccess } from './session-access.service';
import { SessionMessages } from './session-messages.service';
import { ServerLogs } from './server-logs.service';
import { WorkSignal } from './work-signal';
import { SessionRetentionJob } from './jobs/session-retention.job';
import { TurnSweepJob } from './jobs/turn-sweep.job';
import { ToolApprovalLedger } from './tool-approval-ledger';
import { AgentToolApprovalsController, TurnControlController } from './turn-control.controller';
import { TurnControlService } from './turn-control.service';
import { ToolApprovalRequests } from './tool-approval-requests.service';
import { ToolApprovalWaits } from './tool-approval-waits.service';

@Module({
  imports: [AuthModule],
  controllers: [SessionsController, AgentController, TurnControlController, AgentToolApprovalsController],
  providers: [
    SessionsRepository,
    SessionShapes,
    TurnsRepository,
    ToolApprovalsRepository,
    TokenUsageRepository,
    AgentPresenceRepository,
    SessionsService,
    SessionAccess,
    SessionMessages,
    ServerLogs,
    AgentWorkService,
    DeltaRate,
    TurnDeltas,
    WorkQueue,
    WorkClaims,
    HistoryImportService,
    WorkSignal,
    LongPollSlots,
    SessionPolicy,
    AgentPresence,
    SessionReader,
    TokenUsageReader,
    ToolApprovalLedger,
    TurnControlService,
    ToolApprovalRequests,
    ToolApprovalWaits,
    TurnSweepJob,
    SessionRetentionJob,
    HeadlessSessions,
  ],
  exports: [SessionsService, SessionMessages, ServerLogs, SessionReader, TokenUsageReader, AgentWorkService, WorkClaims, HistoryImportService],
})
export class SessionsModule {}
