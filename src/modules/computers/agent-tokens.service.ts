import { Injectable } from '@nestjs/common';
import { generateComputerToken } from '../auth';
import { SecretBox } from '../../platform/secrets/secret-box';
import { agentTokenContext, LOCAL_PROVIDER } from './domain/computer';
import { IssuedAgentToken } from './domain/new-computer';

/** How a computer's agent signs in: the token it is issued with the computer and on each rotation. */
@Injectable()
export class AgentTokens {
  constructor(private readonly box: SecretBox) {}

  /**
   * A new token, stored as its hash and, for `local` computers only, encrypted and bound to the
   * computer (the server starts their agent with it); the rest, whose agents the server never runs, keep no copy.
   */
  issue(provider: string, computerId: string): IssuedAgentToken {
    const { token, hash } = generateComputerToken();
    return { token, hash, encrypted: provider === LOCAL_PROVIDER ? this.box.encrypt(token, agentTokenContext(computerId)) : null };
  }

  /** The kept token of a `local` computer, for whoever runs its agent (this server, or the worker it is placed on). */
  reveal(computerId: string, encrypted: string): string {
    return this.box.decrypt(encrypted, agentTokenContext(computerId));
  }
}
