import { Global, Module } from '@nestjs/common';
import { AuthModule, ComputerTokenLookup, WorkerSessionLookup } from '../auth';
import { EnterpriseControlsModule } from '../enterprise-controls';
import { ComputerVisibility, SessionsModule } from '../sessions';
import { ComputerTokenLookupFromTable } from './contracts/computer-token-lookup-from-table';
import { WorkerSessionLookupFromTable } from './contracts/worker-session-lookup-from-table';
import { ComputerVisibilityFromTable } from './contracts/computer-visibility-from-table';
import { SecretBox } from '../../platform/secrets/secret-box';
import { LocalAgentLauncher } from './agents/local-agent-launcher';
import { LocalAgentSupervisor } from './agents/local-agent-supervisor';
import { AgentConnectController, ComputersController } from './computers.controller';
import { ComputersRepository } from './computers.repository';
import { ComputersService } from './computers.service';
import { ProvisioningJob } from './jobs/provisioning.job';
import { ProvisioningMetrics } from './jobs/provisioning-metrics';
import { ComputeProvider } from './providers/compute-provider';
import { LocalProvider } from './providers/local.provider';
import { ComputerSandbox } from './sandbox/computer-sandbox';
import { WorkerChannelController } from './workers/worker-channel.controller';
import { WorkerChannelService } from './workers/worker-channel.service';
import { WorkerPoolsModule } from './workers/worker-pools.module';
import { WorkerMetrics } from './workers/worker-metrics';
import { WorkerSweepJob } from './workers/worker-sweep.job';

/** Global for the contracts it fulfils: Sessions' ComputerVisibility and Auth's ComputerTokenLookup and WorkerSessionLookup. */
@Global()
@Module({
  imports: [AuthModule, SessionsModule, EnterpriseControlsModule, WorkerPoolsModule],
  controllers: [ComputersController, AgentConnectController, WorkerChannelController],
  providers: [
    ComputersRepository,
    ComputersService,
    ProvisioningJob,
    ProvisioningMetrics,
    LocalProvider,
    ComputerSandbox,
    { provide: ComputeProvider, useExisting: LocalProvider },
    LocalAgentLauncher,
    LocalAgentSupervisor,
    WorkerChannelService,
    WorkerSweepJob,
    WorkerMetrics,
    SecretBox,
    { provide: ComputerVisibility, useClass: ComputerVisibilityFromTable },
    { provide: ComputerTokenLookup, useClass: ComputerTokenLookupFromTable },
    { provide: WorkerSessionLookup, useClass: WorkerSessionLookupFromTable },
  ],
  exports: [ComputersService, ComputerVisibility, ComputerTokenLookup, WorkerSessionLookup],
})
export class ComputersModule {}
