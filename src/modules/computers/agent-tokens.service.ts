import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable } from '@nestjs/common';
import { Authenticator, generateComputerToken, Principal, securityActorOf } from '../auth';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { SecretBox } from '../../platform/secrets/secret-box';
import { LocalAgentSupervisor } from './agents/local-agent-supervisor';
import { ComputerAccess } from './computer-access.service';
import { ComputersRepository } from './computers.repository';
import { agentTokenContext, LOCAL_PROVIDER } from './domain/computer';
import { IssuedAgentToken } from './domain/new-computer';

export type RotatedAgentToken = ApiSchema<'RotatedAgentToken'>;

/** A computer's agent token: issued with the computer, replaced on request, shown once each time. */
@Injectable()
export class AgentTokens {
  constructor(
    private readonly repository: ComputersRepository,
    private readonly access: ComputerAccess,
    private readonly box: SecretBox,
    private readonly authenticator: Authenticator,
    private readonly agents: LocalAgentSupervisor,
  ) {}

  /**
   * A new token, stored as its hash and, for `local` computers only, encrypted and bound to the
   * computer (the server starts their agent with it); the rest, whose agents the server never runs, keep no copy.
   */
  issue(provider: string, computerId: string): IssuedAgentToken {
    const { token, hash } = generateComputerToken();
    return { token, hash, encrypted: provider === LOCAL_PROVIDER ? this.box.encrypt(token, agentTokenContext(computerId)) : null };
  }

  /**
   * A new agent token; the old one stops working at once on this instance, within AUTH_CACHE_MS
   * elsewhere. A local computer's agent is restarted with the new one.
   */
  async rotate(principal: Principal, computerId: string): Promise<RotatedAgentToken> {
    const now = new Date();
    const { previous, token } = await this.repository.transaction(async (manager) => {
      const locked = await this.access.visible(principal, computerId, { manager, lock: true });
      const token = this.issue(locked.provider, locked.id);
      await this.repository.update(manager, locked, { agentTokenHash: token.hash, agentTokenEncrypted: token.encrypted, agentTokenCreatedAt: now });
      return { previous: { id: locked.id, hash: locked.agentTokenHash, provider: locked.provider }, token };
    });
    logSecurityEvent('computer.agent_token.issued', securityActorOf(principal), { computerId: previous.id });
    this.authenticator.forgetComputerToken(previous.hash);
    if (previous.provider === LOCAL_PROVIDER) this.agents.wake();
    return { computerId: previous.id, agentToken: token.token, createdAt: now.getTime() };
  }
}
