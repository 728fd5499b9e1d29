import { Injectable } from '@nestjs/common';
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Counter } from 'prom-client';
import { Sql } from '../database/sql';
import { AppConfig } from '../../config/app-config';
import { JobRunner } from '../jobs';
import { Metrics } from '../metrics';
import { logSecurityEvent } from '../logging/security-log';
import { BudgetLedger, MemoryLedger, PostgresLedger } from './budget-ledger';
import { LeasedCounter } from './leased-store';
import { RateLimitError, RateLimitErrorCode } from './rate-limit.errors';

/** Whom a request counts against, decided once its credential is checked (before its body is read). */
export type RateLimitSubject =
  | { kind: 'credential'; credentialId: string; organizationId: string; userId: string }
  | { kind: 'worker'; workerId: string; organizationId: string }
  | { kind: 'anonymous' }
  | { kind: 'exempt' };

const POLICY_NAMES = ['credential', 'organization', 'worker', 'anonymous'] as const;
type PolicyName = (typeof POLICY_NAMES)[number];

interface Policy {
  name: PolicyName;
  max: number;
  /** The client it counts, within the policy's own keys. */
  client: (subject: RateLimitSubject, request: FastifyRequest) => string;
}

/** The policies one kind of subject meets, and their RateLimit-Policy header (the same on every answer). */
interface Policies {
  list: Policy[];
  header: string;
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
 * Requests a minute per credential, per organization, per worker (on the worker channel) and per client address
 * without a valid credential, counted in fixed one-minute windows. With PostgreSQL the budget is shared by every
 * instance on the database (see PostgresLedger); on the embedded database it is counted in memory.
 * Every request is counted by LeasedCounter directly, without a promise while the instance holds budget: through
 * @fastify/rate-limit's limiter (an async key generator, a promise and a result object per policy) the same two
 * counts made 16 of a session read's 93 promises (issue 41). Its normalizeIP still keys clients by address.
 */
@Injectable()
export class RateLimits {
  private readonly ledger: BudgetLedger;
  private readonly counter: LeasedCounter;
  private readonly ofCredential: Policies;
  private readonly ofWorker: Policies;
  private readonly ofAnonymous: Policies;
  /** Clients refused in the current window, logged once each: key → end of its window. */
  private readonly logged = new Map<string, number>();

  private readonly rejections: Counter<'policy'>;

  constructor(config: AppConfig, sql: Sql, jobs: JobRunner, metrics: Metrics) {
    this.ledger = config.engine === 'postgres' ? new PostgresLedger(sql) : new MemoryLedger();
    this.counter = new LeasedCounter(this.ledger);
    this.rejections = metrics.counter({
      name: 'rate_limit_rejections_total',
      help: 'Requests refused with 429 by a rate limit, by policy (credential, organization, worker, anonymous).',
      labelNames: ['policy'] as const,
    });
    // Each series from 0, so that a rate over the first refusal sees it.
    for (const policy of POLICY_NAMES) this.rejections.inc({ policy }, 0);
    const policy = (name: PolicyName, max: number, client: Policy['client']): Policy[] => (max > 0 ? [{ name, max, client }] : []);
    this.ofCredential = policies([
      ...policy('credential', config.RATE_LIMIT_CREDENTIAL_PER_MINUTE, (subject) => credentialOf(subject).credentialId),
      ...policy('organization', config.RATE_LIMIT_ORGANIZATION_PER_MINUTE, (subject) => credentialOf(subject).organizationId),
    ]);
    // A worker's own budget, not its organization's: a fleet's steady traffic leaves the people theirs.
    this.ofWorker = policies(policy('worker', config.WORKER_RATE_LIMIT_PER_MINUTE, (subject) => workerOf(subject).workerId));
    this.ofAnonymous = policies(policy('anonymous', config.RATE_LIMIT_ANONYMOUS_PER_MINUTE, (_subject, request) => normalizeIP(request.ip)));
    if ([this.ofCredential, this.ofWorker, this.ofAnonymous].some((of) => of.list.length > 0)) {
      jobs.register({ name: 'rate-limits.sweep', everyMs: WINDOW_MS, run: () => this.sweep() });
    }
  }

  /**
   * Counts the request against its subject's limits and writes the RateLimit headers; over a
   * limit, sets Retry-After and throws a 429. Stops at the first limit refused, so a client
   * over its own limit does not spend its organization's. A limit whose budget cannot be read
   * (the database is down) lets the request through.
   */
  async admit(request: FastifyRequest, reply: FastifyReply, subject: RateLimitSubject): Promise<void> {
    const policies = this.policiesOf(subject);
    if (!policies || policies.list.length === 0) return;
    let tightest: Outcome | undefined;
    for (const policy of policies.list) {
      const counted = this.counter.count(`${policy.name}:${policy.client(subject, request)}`, WINDOW_MS, policy.max);
      // Awaited only when this instance must ask the ledger for budget: a promise per request costs.
      const count = counted instanceof Promise ? await counted : counted;
      const outcome: Outcome = count
        ? { policy, remaining: Math.max(0, policy.max - count.current), resetSeconds: Math.ceil(count.ttl / 1000), exceeded: count.current > policy.max }
        : { policy, remaining: policy.max, resetSeconds: 0, exceeded: false };
      if (!tightest || outcome.exceeded || outcome.remaining < tightest.remaining) tightest = outcome;
      if (outcome.exceeded) break;
    }
    if (!tightest) return;
    void reply.header('ratelimit-policy', policies.header);
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

  private policiesOf(subject: RateLimitSubject): Policies | null {
    switch (subject.kind) {
      case 'credential':
        return this.ofCredential;
      case 'worker':
        return this.ofWorker;
      case 'anonymous':
        return this.ofAnonymous;
      case 'exempt':
        return null;
    }
  }

  /** One line per client, policy and window, however many requests it sends over the limit. */
  private logOnce(request: FastifyRequest, subject: RateLimitSubject, outcome: Outcome, retryAfter: number): void {
    const key = `${outcome.policy.name}:${outcome.policy.client(subject, request)}`;
    const now = Date.now();
    if ((this.logged.get(key) ?? 0) > now) return;
    this.logged.set(key, now + retryAfter * 1000);
    const actor =
      subject.kind === 'credential'
        ? { organizationId: subject.organizationId, userId: subject.userId, credentialId: subject.credentialId }
        : subject.kind === 'worker'
          ? { organizationId: subject.organizationId, credentialId: `worker:${subject.workerId}`, ip: request.ip }
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

function policies(list: Policy[]): Policies {
  return { list, header: list.map((p) => `"${p.name}";q=${p.max};w=${WINDOW_SECONDS}`).join(', ') };
}

function credentialOf(subject: RateLimitSubject): Extract<RateLimitSubject, { kind: 'credential' }> {
  if (subject.kind !== 'credential') throw new Error('A credential limit was checked for a request without a credential');
  return subject;
}

function workerOf(subject: RateLimitSubject): Extract<RateLimitSubject, { kind: 'worker' }> {
  if (subject.kind !== 'worker') throw new Error("A worker's limit was checked for a request without a worker session");
  return subject;
}
