import { Global, Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { AgentAvailability, SessionsModule } from '../sessions';
import { AgentController } from './agent.controller';
import { AgentPresence } from './agent-presence';
import { AgentPresenceRepository } from './agent-presence.repository';
import { AgentWorkService } from './agent-work.service';
import { AgentAvailabilityFromPresence } from './contracts/agent-availability-from-presence';
import { DeltaRate } from './delta-rate';
import { HeadlessSessions } from './headless-sessions.service';
import { TurnSweepJob } from './jobs/turn-sweep.job';
import { LongPollSlots } from './long-poll-slots';
import { ToolApprovalLedger } from './tool-approval-ledger';
import { ToolApprovalRequests } from './tool-approval-requests.service';
import { ToolApprovalWaits } from './tool-approval-waits.service';
import { ToolApprovalsRepository } from './tool-approvals.repository';
import { AgentToolApprovalsController, TurnControlController } from './turn-control.controller';
import { TurnControlService } from './turn-control.service';
import { TurnDeltas } from './turn-deltas.service';
import { WorkClaims } from './work-claims.service';
import { WorkQueue } from './work-queue';
import { WorkSignal } from './work-signal';

/**
 * The agent's side of a turn: agents claim work (long polls woken by the work signal), report messages, usage and
 * deltas under a lease, ask people to approve tool calls; people interrupt turns and decide approvals. The turn's
 * state is in the session's row, reached through Sessions' SessionTurns. Global for the contract it fulfils:
 * Sessions' AgentAvailability.
 */
@Global()
@Module({
  imports: [AuthModule, SessionsModule],
  controllers: [AgentController, TurnControlController, AgentToolApprovalsController],
  providers: [
    AgentWorkService,
    WorkQueue,
    WorkClaims,
    WorkSignal,
    LongPollSlots,
    AgentPresence,
    AgentPresenceRepository,
    DeltaRate,
    TurnDeltas,
    TurnControlService,
    ToolApprovalsRepository,
    ToolApprovalLedger,
    ToolApprovalRequests,
    ToolApprovalWaits,
    HeadlessSessions,
    TurnSweepJob,
    { provide: AgentAvailability, useClass: AgentAvailabilityFromPresence },
  ],
  exports: [AgentWorkService, WorkClaims, AgentAvailability],
})
export class AgentChannelModule {}
