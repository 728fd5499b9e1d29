import { Injectable } from '@nestjs/common';
import fastifyRateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Counter } from 'prom-client';
import { Sql } from '../database/sql';
import { AppConfig } from '../../config/app-config';
import { JobRunner } from '../jobs';
import { Metrics } from '../metrics';
import { logSecurityEvent } from '../logging/security-log';
import { BudgetLedger, MemoryLedger, PostgresLedger } from './budget-ledger';
import { LeasedCounter, leasedStoreClass } from './leased-store';
import { RateLimitError, RateLimitErrorCode } from './rate-limit.errors';

/** Whom a request counts against, decided once its credential is checked (before its body is read). */
export type RateLimitSubject =
  { kind: 'credential'; credentialId: string; organizationId: string; userId: string } | { kind: 'anonymous' } | { kind: 'exempt' };

type PolicyName = 'credential' | 'organization' | 'anonymous';

type Limiter = ReturnType<FastifyInstance['createRateLimit']>;

interface Policy {
  name: PolicyName;
  max: number;
  check: Limiter;
}

interface Outcome {
  policy: Policy;
  remaining: number;
  resetSeconds: number;
  exceeded: boolean;
}

export const WINDOW_MS = 60_000;
const WINDOW_SECONDS = WINDOW_MS / 1000;

/**
 * Requests a minute per credential, per organization and per client address without a valid
 * credential, counted in fixed one-minute windows. With PostgreSQL the budget is shared by every
 * instance on the database (see PostgresLedger); on the embedded database it is counted in memory.
 */
@Injectable()
export class RateLimits {
  private readonly ledger: BudgetLedger;
  private readonly counter: LeasedCounter;
  private readonly subjects = new WeakMap<FastifyRequest, RateLimitSubject>();
  /** Clients refused in the current window, logged once each: key → end of its window. */
  private readonly logged = new Map<string, number>();
  private credential?: Policy;
  private organization?: Policy;
  private anonymous?: Policy;

  private readonly rejections: Counter<'policy'>;

  constructor(
    private readonly config: AppConfig,
    sql: Sql,
    private readonly jobs: JobRunner,
    metrics: Metrics,
  ) {
    this.ledger = config.engine === 'postgres' ? new PostgresLedger(sql) : new MemoryLedger();
    this.counter = new LeasedCounter(this.ledger);
    this.rejections = metrics.counter({
      name: 'rate_limit_rejections_total',
      help: 'Requests refused with 429 by a rate limit, by policy (credential, organization, anonymous).',
      labelNames: ['policy'] as const,
    });
    // Each series from 0, so that a rate over the first refusal sees it.
    for (const policy of ['credential', 'organization', 'anonymous'] as const) this.rejections.inc({ policy }, 0);
  }

  /** Registers @fastify/rate-limit (no route hooks of its own: `admit` is called by the request edge). */
  async install(fastify: FastifyInstance): Promise<void> {
    await fastify.register(fastifyRateLimit, { global: false, store: leasedStoreClass(this.counter), skipOnError: true });
    const policy = (name: PolicyName, max: number, key: (request: FastifyRequest) => string): Policy | undefined =>
      max > 0 ? { name, max, check: fastify.createRateLimit({ max, timeWindow: WINDOW_MS, keyGenerator: (request) => `${name}:${key(request)}` }) } : undefined;
    this.credential = policy('credential', this.config.RATE_LIMIT_CREDENTIAL_PER_MINUTE, (request) => this.credentialOf(request).credentialId);
    this.organization = policy('organization', this.config.RATE_LIMIT_ORGANIZATION_PER_MINUTE, (request) => this.credentialOf(request).organizationId);
    this.anonymous = policy('anonymous', this.config.RATE_LIMIT_ANONYMOUS_PER_MINUTE, (request) => normalizeIP(request.ip));
    if (this.credential || this.organization || this.anonymous) {
      this.jobs.register({ name: 'rate-limits.sweep', everyMs: WINDOW_MS, run: () => this.sweep() });
    }
  }

  /**
   * Counts the request against its subject's limits and writes the RateLimit headers; over a
   * limit, sets Retry-After and throws a 429. Stops at the first limit refused, so a client
   * over its own limit does not spend its organization's.
   */
  async admit(request: FastifyRequest, reply: FastifyReply, subject: RateLimitSubject): Promise<void> {
    const policies = this.policiesOf(subject);
    if (policies.length === 0) return;
    this.subjects.set(request, subject);
    const outcomes: Outcome[] = [];
    for (const policy of policies) {
      const result = await policy.check(request);
      const outcome: Outcome = result.isAllowed
        ? { policy, remaining: policy.max, resetSeconds: WINDOW_SECONDS, exceeded: false }
        : { policy, remaining: result.remaining, resetSeconds: Math.max(result.ttlInSeconds, 0), exceeded: result.isExceeded };
      outcomes.push(outcome);
      if (outcome.exceeded) break;
    }
    const tightest = outcomes.reduce((a, b) => (b.exceeded || b.remaining < a.remaining ? b : a));
    void reply.header('ratelimit-policy', policies.map((p) => `"${p.name}";q=${p.max};w=${WINDOW_SECONDS}`).join(', '));
    void reply.header('ratelimit', `"${tightest.policy.name}";r=${tightest.remaining};t=${tightest.resetSeconds}`);
    if (!tightest.exceeded) return;
    const retryAfter = Math.max(tightest.resetSeconds, 1);
    this.rejections.inc({ policy: tightest.policy.name });
    this.logOnce(request, subject, tightest, retryAfter);
    const error = new RateLimitError(
      RateLimitErrorCode.RateLimited,
      `Too many requests: the ${tightest.policy.name} limit is ${tightest.policy.max} a minute. Retry after ${retryAfter} s.`,
      { policy: tightest.policy.name, limit: tightest.policy.max, windowSeconds: WINDOW_SECONDS, retryAfterSeconds: retryAfter },
    );
    error.retryAfterSeconds = retryAfter;
    throw error;
  }

  private policiesOf(subject: RateLimitSubject): Policy[] {
    switch (subject.kind) {
      case 'credential':
        return [this.credential, this.organization].filter((p): p is Policy => p !== undefined);
      case 'anonymous':
        return this.anonymous ? [this.anonymous] : [];
      case 'exempt':
        return [];
    }
  }

  private credentialOf(request: FastifyRequest): Extract<RateLimitSubject, { kind: 'credential' }> {
    const subject = this.subjects.get(request);
    if (subject?.kind !== 'credential') throw new Error('A credential limit was checked for a request without a credential');
    return subject;
  }

  /** One line per client, policy and window, however many requests it sends over the limit. */
  private logOnce(request: FastifyRequest, subject: RateLimitSubject, outcome: Outcome, retryAfter: number): void {
    const client =
      subject.kind === 'credential' ? (outcome.policy.name === 'organization' ? subject.organizationId : subject.credentialId) : normalizeIP(request.ip);
    const key = `${outcome.policy.name}:${client}`;
    const now = Date.now();
    if ((this.logged.get(key) ?? 0) > now) return;
    this.logged.set(key, now + retryAfter * 1000);
    const actor =
      subject.kind === 'credential'
        ? { organizationId: subject.organizationId, userId: subject.userId, credentialId: subject.credentialId }
        : { ip: request.ip };
    logSecurityEvent('rate_limit.exceeded', actor, { policy: outcome.policy.name, limit: outcome.policy.max, windowSeconds: WINDOW_SECONDS });
  }

  /** Forgets finished windows (the `rate-limits.sweep` job). */
  private async sweep(): Promise<void> {
    const now = Date.now();
    this.counter.sweep(now);
    for (const [key, until] of this.logged) if (until <= now) this.logged.delete(key);
    // Every instance deletes; the deletes are idempotent. Two windows back: no instance still counts in them.
    await this.ledger.forget(now - (now % WINDOW_MS) - WINDOW_MS).catch(() => undefined);
  }
}
