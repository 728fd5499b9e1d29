import { Global, Module } from '@nestjs/common';
import { AuthModule, ComputerTokenLookup } from '../auth';
import { EnterpriseControlsModule } from '../enterprise-controls';
import { ComputerVisibility, SessionsModule } from '../sessions';
import { ComputerTokenLookupFromTable } from './contracts/computer-token-lookup-from-table';
import { ComputerVisibilityFromTable } from './contracts/computer-visibility-from-table';
import { SecretBox } from '../../platform/secrets/secret-box';
import { LocalAgentLauncher } from './agents/local-agent-launcher';
import { LocalAgentSupervisor } from './agents/local-agent-supervisor';
import { AgentConnectController, ComputersController } from './computers.controller';
import { ComputersRepository } from './computers.repository';
import { AgentTokens } from './agent-tokens.service';
import { ComputerAccess } from './computer-access.service';
import { ComputerCreationPolicy } from './computer-creation-policy.service';
import { ComputerCreation } from './computer-creation.service';
import { ComputerDeletion } from './computer-deletion.service';
import { ComputerQuotas } from './computer-quotas.service';
import { ComputerUpdates } from './computer-updates.service';
import { ComputerViews } from './computer-views.service';
import { FailedProvisioningRecorder } from './failed-provisioning-recorder.service';
import { NewComputerStore } from './new-computer-store.service';
import { ProvisioningRetry } from './provisioning-retry.service';
import { ProvisioningJob } from './jobs/provisioning.job';
import { ProvisioningMetrics } from './jobs/provisioning-metrics';
import { ComputeProvider } from './providers/compute-provider';
import { LocalProvider } from './providers/local.provider';
import { ComputerSandbox } from './sandbox/computer-sandbox';

/** Global for the contracts it fulfils: Sessions' ComputerVisibility and Auth's ComputerTokenLookup. */
@Global()
@Module({
  imports: [AuthModule, SessionsModule, EnterpriseControlsModule],
  controllers: [ComputersController, AgentConnectController],
  providers: [
    ComputersRepository,
    ComputerAccess,
    ComputerViews,
    ComputerQuotas,
    ComputerCreationPolicy,
    AgentTokens,
    NewComputerStore,
    ComputerCreation,
    FailedProvisioningRecorder,
    ComputerUpdates,
    ProvisioningRetry,
    ComputerDeletion,
    ProvisioningJob,
    ProvisioningMetrics,
    LocalProvider,
    ComputerSandbox,
    { provide: ComputeProvider, useExisting: LocalProvider },
    LocalAgentLauncher,
    LocalAgentSupervisor,
    SecretBox,
    { provide: ComputerVisibility, useClass: ComputerVisibilityFromTable },
    { provide: ComputerTokenLookup, useClass: ComputerTokenLookupFromTable },
  ],
  exports: [ComputerViews, ComputerCreation, ComputerUpdates, FailedProvisioningRecorder, ComputerVisibility, ComputerTokenLookup],
})
export class ComputersModule {}
