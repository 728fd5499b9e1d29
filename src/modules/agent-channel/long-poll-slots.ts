import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { Principal, securityActorOf } from '../auth';
import { logSecurityEvent } from '../../platform/logging/security-log';
import { Metrics } from '../../platform/metrics';
import { InFlight } from '../../platform/rate-limit/in-flight';
import { SessionsError, SessionsErrorCode } from '../sessions';

/** What a refused long poll is told to wait before trying again: about when a poll of a busy agent ends. */
export const LONG_POLL_RETRY_AFTER_SECONDS = 5;
/** A refused computer or organization is logged at most this often. */
const LOG_EVERY_MS = 60_000;

/** The work a poll waits for: its organization, computer and owner (WorkFilter's). */
export interface PollQueue {
  organizationId: string;
  computerId: string | null;
  ownerId?: string;
}

/**
 * Caps the long polls waiting at once on this instance: per computer (LONG_POLLS_PER_COMPUTER)
 * and per organization (LONG_POLLS_PER_ORGANIZATION). Per instance: each of N instances admits
 * up to the caps, a client spreading its polls over instances gets N times as many. Claims that
 * do not wait are not counted.
 */
@Injectable()
export class LongPollSlots {
  private readonly perComputer = new InFlight();
  private readonly perOrganization = new InFlight();
  /** Per queue (organization, computer, owner): whether a poll for the same work already waits here. */
  private readonly perQueue = new InFlight();
  private readonly lastLogged = new Map<string, number>();

  constructor(
    private readonly config: AppConfig,
    metrics: Metrics,
  ) {
    metrics.gauge({ name: 'long_polls_open', help: 'Long polls (claims with waitMs) waiting on this instance.', read: () => this.waiting() });
  }

  /** Long polls waiting on this instance now: all of them, or one organization's (the gauge reads it, and tests wait on it). */
  waiting(organizationId?: string): number {
    return organizationId === undefined ? this.perOrganization.total : this.perOrganization.count(organizationId);
  }

  /**
   * Takes a slot for a waiting claim (of work: `queue` names the work it waits for), or throws 429; call the
   * returned function once, when it ends.
   */
  acquire(principal: Principal, computerId: string | null, queue?: PollQueue): () => void {
    const organizationId = principal.organizationId;
    if (computerId !== null && this.perComputer.count(computerId) >= this.config.LONG_POLLS_PER_COMPUTER) {
      this.refuse(principal, 'computer', computerId, 'LONG_POLLS_PER_COMPUTER', this.config.LONG_POLLS_PER_COMPUTER);
    }
    if (this.perOrganization.count(organizationId) >= this.config.LONG_POLLS_PER_ORGANIZATION) {
      this.refuse(principal, 'organization', organizationId, 'LONG_POLLS_PER_ORGANIZATION', this.config.LONG_POLLS_PER_ORGANIZATION);
    }
    const releaseOrganization = this.perOrganization.take(organizationId);
    const releaseComputer = computerId === null ? () => undefined : this.perComputer.take(computerId);
    const releaseQueue = queue ? this.perQueue.take(queueKey(queue)) : () => undefined;
    return () => {
      releaseOrganization();
      releaseComputer();
      releaseQueue();
    };
  }

  /**
   * Before a waiting claim reads anything: throws the 429 `acquire` would when a cap is full and a poll for the
   * same work already waits here. That poll would take whatever work arrives, so this claim could find none at
   * once: it is refused without a look at the database, and a surge of polls cannot queue behind it.
   */
  refuseIfFull(principal: Principal, queue: PollQueue): void {
    if (this.perQueue.count(queueKey(queue)) === 0) return;
    this.acquire(principal, queue.computerId)();
  }

  private refuse(principal: Principal, scope: 'computer' | 'organization', id: string, setting: string, limit: number): never {
    const key = `${scope}:${id}`;
    const now = Date.now();
    if (now - (this.lastLogged.get(key) ?? -Infinity) >= LOG_EVERY_MS) {
      for (const [logged, at] of this.lastLogged) if (now - at >= LOG_EVERY_MS) this.lastLogged.delete(logged);
      this.lastLogged.set(key, now);
      logSecurityEvent('quota.exceeded', securityActorOf(principal), { quota: setting, limit, [`${scope}Id`]: id });
    }
    const whose = scope === 'computer' ? `Computer ${id} already has` : 'Your organization already has';
    const error = new SessionsError(
      SessionsErrorCode.TooManyLongPolls,
      `${whose} ${limit} long polls waiting on this server (${setting}). Retry after ${LONG_POLL_RETRY_AFTER_SECONDS} s, or claim without waitMs.`,
      { limit: setting, max: limit, ...(scope === 'computer' ? { computerId: id } : {}) },
    );
    error.retryAfterSeconds = LONG_POLL_RETRY_AFTER_SECONDS;
    throw error;
  }
}

function queueKey(queue: PollQueue): string {
  return `${queue.organizationId}|${queue.computerId ?? ''}|${queue.ownerId ?? ''}`;
}
