import { Module, OnModuleInit } from '@nestjs/common';
import { AuthModule, ComputerTokenLookup } from '../auth';
import { EnterpriseControlsModule } from '../enterprise-controls';
import { ComputerDirectory, SessionsModule } from '../sessions';
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
  ],
  exports: [ComputersService],
})
export class ComputersModule implements OnModuleInit {
  constructor(
    private readonly computers: ComputersService,
    private readonly repository: ComputersRepository,
    private readonly directory: ComputerDirectory,
    private readonly tokens: ComputerTokenLookup,
  ) {}

  /** Sessions and Auth cannot import this module (it imports them), so it hands them its lookups. */
  onModuleInit(): void {
    computerSchemas.compileAll();
    this.directory.bind((principal, computerId) => this.computers.isVisible(principal, computerId));
    this.tokens.bind((hash) => this.repository.findCallerByTokenHash(hash));
  }
}
