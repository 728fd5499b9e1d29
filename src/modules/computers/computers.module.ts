import { Global, Module, OnModuleInit } from '@nestjs/common';
import { AuthModule, ComputerTokenLookup } from '../auth';
import { EnterpriseControlsModule } from '../enterprise-controls';
import { ComputerDirectory, SessionsModule } from '../sessions';
import { ComputerTokens, ComputerVisibility } from './computers.contracts';
import { SecretBox } from '../../platform/secrets/secret-box';
import { LocalAgentSupervisor } from './agents/local-agent-supervisor';
import { AgentConnectController, ComputersController } from './computers.controller';
import { ComputersRepository } from './computers.repository';
import { ComputersService } from './computers.service';
import { ProvisioningJob } from './jobs/provisioning.job';
import { ComputeProvider } from './providers/compute-provider';
import { LocalProvider } from './providers/local.provider';
import { ComputerSandbox } from './sandbox/computer-sandbox';
import { computerSchemas } from './schemas/computer.schemas';

/** Global for the contracts it fulfils: Sessions' ComputerDirectory and Auth's ComputerTokenLookup. */
@Global()
@Module({
  imports: [AuthModule, SessionsModule, EnterpriseControlsModule],
  controllers: [ComputersController, AgentConnectController],
  providers: [
    ComputersRepository,
    ComputersService,
    ProvisioningJob,
    LocalProvider,
    ComputerSandbox,
    { provide: ComputeProvider, useExisting: LocalProvider },
    LocalAgentSupervisor,
    SecretBox,
    { provide: ComputerDirectory, useClass: ComputerVisibility },
    { provide: ComputerTokenLookup, useClass: ComputerTokens },
  ],
  exports: [ComputersService, ComputerDirectory, ComputerTokenLookup],
})
export class ComputersModule implements OnModuleInit {
  onModuleInit(): void {
    computerSchemas.compileAll();
  }
}
