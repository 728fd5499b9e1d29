import { Injectable, Logger } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { AgentProcesses, AgentProcessesOptions } from '../../../host/agent-processes';
import { SecretBox } from '../../../platform/secrets/secret-box';
import { agentTokenContext } from '../domain/computer';
import { LocalProvider } from '../providers/local.provider';
import { ComputerSandbox } from '../sandbox/computer-sandbox';

/**
 * Whether one computer's reference agent can start on this server at all: its workspace here, its sandbox, its token.
 * The process itself is the host library's (`AgentProcesses`); what runs where, and when, is the supervisor's.
 */
@Injectable()
export class LocalAgentLauncher {
  // The supervisor's name: one story per agent in the log, whichever class tells it.
  private readonly logger = new Logger('LocalAgentSupervisor');
  /** Computers whose token cannot be decrypted, by the envelope that failed: said once, not at every look. */
  private readonly unreadable = new Map<string, string>();
  /** Computers whose sandbox cannot start, by the reason: said once, not at every look. */
  private readonly unsandboxable = new Map<string, string>();

  constructor(
    private readonly provider: LocalProvider,
    private readonly box: SecretBox,
    private readonly sandbox: ComputerSandbox,
  ) {}

  /** Whether the computer's workspace is on this host (a computer provisioned on another is that host's to run). */
  isHere(computerId: string): boolean {
    return existsSync(this.provider.workspaceOf(computerId));
  }

  /** The computer's token, when its agent can start: null (said once per reason) when its sandbox cannot start or its token cannot be read. */
  async tokenFor(computerId: string, envelope: string): Promise<string | null> {
    const unavailable = await this.sandbox.unavailable(computerId);
    if (unavailable) {
      if (this.unsandboxable.get(computerId) !== unavailable) {
        this.logger.error(
          `The agent of computer ${computerId} does not start: this host cannot sandbox it (${unavailable}); LOCAL_SANDBOX=off would run it unsandboxed`,
        );
        this.unsandboxable.set(computerId, unavailable);
      }
      return null;
    }
    this.unsandboxable.delete(computerId);
    try {
      const token = this.box.decrypt(envelope, agentTokenContext(computerId));
      this.unreadable.delete(computerId);
      return token;
    } catch (error) {
      if (this.unreadable.get(computerId) !== envelope) {
        this.logger.error(
          `The agent of computer ${computerId} cannot start: its stored token cannot be decrypted (${(error as Error).message}); rotating the token gives it a new one`,
        );
        this.unreadable.set(computerId, envelope);
      }
      return null;
    }
  }

  /** Forgets what was said about computers that no longer need an agent here. */
  forgetAllBut(wanted: ReadonlySet<string>): void {
    for (const computerId of this.unreadable.keys()) if (!wanted.has(computerId)) this.unreadable.delete(computerId);
  }

  /** The agents' processes on this server's host, in its computers' sandboxes and workspaces. */
  processes(owner: Pick<AgentProcessesOptions, 'url' | 'stopping'>): AgentProcesses {
    return new AgentProcesses({ sandbox: this.sandbox, workspaces: this.provider, logger: this.logger, ...owner });
  }
}
