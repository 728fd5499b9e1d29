import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AppConfig } from '../../config/app-config';
import { Principal, securityActorOf } from '../auth';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { ComputersRepository } from './computers.repository';
import { LOCAL_PROVIDER } from './domain/computer';
import { ComputerQuota, QuotaExceededError } from './domain/computers.errors';

export interface QuotaUsage {
  computers: number;
  local: number;
  provisioning: number;
}

/**
 * The organization's quotas on computers, counted under its quota lock (held until the caller's
 * transaction ends), so two requests never both take the last slot.
 */
@Injectable()
export class ComputerQuotas {
  constructor(
    private readonly repository: ComputersRepository,
    private readonly config: AppConfig,
  ) {}

  lockUsage(manager: EntityManager, organizationId: string): Promise<QuotaUsage> {
    return this.repository.lockQuotaUsage(manager, organizationId);
  }

  /**
   * Refuses one more computer of this kind. The lasting quotas are checked before provisioning,
   * which frees itself: a refusal names the quota that waiting would not lift.
   */
  async checkNewComputer(manager: EntityManager, principal: Principal, wanted: { managed: boolean; local: boolean }): Promise<void> {
    const usage = await this.lockUsage(manager, principal.organizationId);
    if (usage.computers >= this.config.COMPUTERS_PER_ORGANIZATION) this.refuse(principal, ComputerQuota.Computers);
    if (wanted.local && usage.local >= this.config.LOCAL_AGENTS_PER_ORGANIZATION) this.refuse(principal, ComputerQuota.LocalAgents);
    if (wanted.managed) this.checkProvisioning(principal, usage);
  }

  /** Refuses one more computer provisioning at once. */
  checkProvisioning(principal: Principal, usage: QuotaUsage): void {
    if (usage.provisioning >= this.config.PROVISIONING_PER_ORGANIZATION) this.refuse(principal, ComputerQuota.Provisioning);
  }

  private refuse(principal: Principal, quota: ComputerQuota): never {
    const limit = this.config[quota];
    logSecurityEvent('quota.exceeded', securityActorOf(principal), { quota, limit });
    const detail = {
      [ComputerQuota.Computers]: `Your organization has ${limit} computers, as many as it may have (${quota}); delete one to create another.`,
      [ComputerQuota.LocalAgents]: `Your organization has ${limit} managed ${LOCAL_PROVIDER} computers, as many as this server runs agents for (${quota}); delete one to create another.`,
      [ComputerQuota.Provisioning]: `${limit} of your organization's computers are provisioning, as many as may at once (${quota}); try again when one is ready.`,
    }[quota];
    throw new QuotaExceededError(quota, limit, detail);
  }
}
