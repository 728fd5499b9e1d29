import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { HostProvisioner } from '../../../host/host-provisioner';
import { StepId } from '../../../host/step';
import { LOCAL_PROVIDER } from '../domain/computer';
import { ComputerSandbox } from '../sandbox/computer-sandbox';
import { ComputeProvider, StepContext, StepResult } from './compute-provider';

/**
 * The `local` managed provider: a computer is a workspace directory on the server's own host,
 * `COMPUTERS_DIR/<computerId>`, provisioned by the host library (`HostProvisioner`) with the server's settings.
 */
@Injectable()
export class LocalProvider extends ComputeProvider {
  readonly type = LOCAL_PROVIDER;
  private readonly host: HostProvisioner;

  constructor(config: AppConfig, sandbox: ComputerSandbox) {
    super();
    // Read when used, as the configuration is.
    const settings = {
      get computersDir() {
        return config.computersDir;
      },
      get localReposDir() {
        return config.localReposDir;
      },
      get installScripts() {
        return config.LOCAL_INSTALL_SCRIPTS;
      },
      get workspaceMaxMb() {
        return config.LOCAL_WORKSPACE_MAX_MB;
      },
      hostName: "the server's host",
    };
    this.host = new HostProvisioner(settings, sandbox);
  }

  workspaceOf(computerId: string): string {
    return this.host.workspaceOf(computerId);
  }

  /** Where the computer's agent keeps its own files (transcripts for hooks): outside its workspace. */
  agentStateOf(computerId: string): string {
    return this.host.agentStateOf(computerId);
  }

  runStep(step: StepId, context: StepContext): Promise<StepResult> {
    return this.host.runStep(step, context);
  }

  teardown(computerId: string): Promise<void> {
    return this.host.teardown(computerId);
  }
}
