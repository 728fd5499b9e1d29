import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { AccessPolicy, eventActorOf, Principal, Role } from '../auth';
import { EventActor, EventLog, OnDomainEvent, StoredEvent } from '../../platform/events';
import { isUuid, newId } from '../../platform/database/ids';
import { IdempotencyService, IdempotentRequest, IdempotentResult } from '../../platform/idempotency';
import { AgentWorkService, mayWorkOn } from './agent-work.service';
import { ToolApprovalEntity } from './entities';
import { assertTransition, SessionStatus, SessionTrigger } from './domain/session-status';
import { SessionsError, SessionsErrorCode } from './domain/sessions.errors';
import { approvalTimeoutSeconds, ToolApprovalDecision, ToolApprovalStatus, ToolApprovalView, toToolApprovalView } from './domain/tool-approval';
import { SessionView, toSessionView } from './domain/views';
import { LongPollSlots } from './long-poll-slots';
import { SessionPolicy } from './ports/session-policy';
import { SessionsRepository } from './sessions.repository';
import { SessionAccess } from './session-access.service';
import { ToolApprovalLedger } from './tool-approval-ledger';

/** The longest an agent's wait for a decision may last in one request. */
export const MAX_APPROVAL_WAIT_MS = 30_000;
/** Pending approvals a list shows (a turn asks one at a time, so a session rarely has more than one). */
const PENDING_LIST_LIMIT = 100;
/** Rows one sweep transaction handles. */
const SWEEP_BATCH = 100;
const SYSTEM: EventActor = { kind: 'system' };

export interface ToolApprovalRequest {
  turnId: string;
  toolName: string;
  toolCallId?: string;
  summary: string;
  input?: Record<string, unknown>;
}

/**
 * A person in the loop of a turn: a user of the session interrupts the running turn, or allows or
 * denies a tool call its agent asked about; the agent learns both from the channel (the heartbeat
 * answer, and a long poll on the approval). Waits wake on the `tool_approval.resolved` and
 * `turn.interrupted` events, which every instance receives.
 */
@Injectable()
export class TurnControlService {
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly repository: SessionsRepository,
    private readonly access: SessionAccess,
    private readonly work: AgentWorkService,
    private readonly ledger: ToolApprovalLedger,
    private readonly policy: SessionPolicy,
    private readonly idempotency: IdempotencyService,
    private readonly events: EventLog,
    private readonly config: AppConfig,
    private readonly slots: LongPollSlots,
  ) {}

  /**
   * Interrupts the running turn: marks it (who, when), cancels the approvals it waits for and raises
   * `turn.interrupted`. The agent sees it at its next heartbeat; its lease no longer renews, so a
   * silent agent's turn is ended by the sweep after AGENT_INTERRUPT_GRACE_MS. Interrupting a turn
   * already interrupted changes nothing and answers the same.
   */
  async interrupt(principal: Principal, sessionId: string, idempotent?: IdempotentRequest): Promise<IdempotentResult<SessionView>> {
    const session = writable(principal, await this.access.readable(principal, sessionId));
    const actor = eventActorOf(principal);
    return this.idempotency.run(principal, idempotent, async (manager) => {
      const locked = await this.repository.findSession(session.id, principal.organizationId, manager, true);
      if (!locked) throw notFound(sessionId);
      if (locked.status !== SessionStatus.Running || !locked.turnId) {
        throw new SessionsError(SessionsErrorCode.NoRunningTurn, `Session ${sessionId} has no running turn to interrupt: it is ${locked.status}.`, { sessionStatus: locked.status });
      }
      if (locked.turnInterruptedAt) return toSessionView(locked);
      const now = new Date();
      const interrupted = await this.repository.interruptTurn(manager, locked.id, { actor, now, lapsesAt: new Date(now.getTime() + this.config.AGENT_INTERRUPT_GRACE_MS) });
      await this.ledger.cancelPending(manager, locked.id, actor);
      this.events.raise(manager, {
        type: 'turn.interrupted',
        organizationId: principal.organizationId,
        sessionId: locked.id,
        actor,
        data: { sessionId: locked.id, turnId: locked.turnId },
      });
      return toSessionView({ ...interrupted, pendingToolApprovals: 0 });
    });
  }

  /** The session's tool calls waiting for a decision, oldest first, for anyone who may read the session. */
  async pending(principal: Principal, sessionId: string): Promise<ToolApprovalView[]> {
    const session = await this.access.readable(principal, sessionId);
    const now = Date.now();
    // One past its timeout is denied already, whether or not the sweep has written it down yet.
    return (await this.repository.pendingToolApprovals(session.id, PENDING_LIST_LIMIT)).filter((a) => a.expiresAt.getTime() > now).map(toToolApprovalView);
  }

  /** A user of the session allows or denies a pending call: 409 when it has its answer already (or timed out). */
  async decide(
    principal: Principal,
    sessionId: string,
    approvalId: string,
    input: { decision: ToolApprovalDecision; message?: string },
    idempotent?: IdempotentRequest,
  ): Promise<IdempotentResult<{ toolApproval: ToolApprovalView }>> {
    const session = writable(principal, await this.access.readable(principal, sessionId));
    const actor = eventActorOf(principal);
    return this.idempotency.run(principal, idempotent, async (manager) => {
      await this.repository.findSession(session.id, principal.organizationId, manager, true);
      const approval = isUuid(approvalId) ? await this.repository.findToolApproval(session.id, principal.organizationId, approvalId.toLowerCase(), manager, true) : null;
      if (!approval) throw new SessionsError(SessionsErrorCode.ToolApprovalNotFound, `No tool approval ${approvalId} exists in session ${sessionId}.`);
      const status = approval.status === ToolApprovalStatus.Pending && approval.expiresAt.getTime() <= Date.now() ? ToolApprovalStatus.Expired : approval.status;
      if (status !== ToolApprovalStatus.Pending) {
        throw new SessionsError(SessionsErrorCode.ToolApprovalNotPending, `Tool approval ${approvalId} is ${status}: it can no longer be decided.`, { status });
      }
      const outcome = input.decision === 'allow' ? ToolApprovalStatus.Allowed : ToolApprovalStatus.Denied;
      const resolved = await this.ledger.resolve(manager, approval, outcome, actor, input.message ?? null);
      return { toolApproval: toToolApprovalView(resolved) };
    });
  }

  /**
   * The agent holding the running turn asks a person to approve a tool call. The timeout is the
   * shorter of the organization's `toolApproval.timeoutSeconds` and the session's (default 600 s).
   */
  async request(
    principal: Principal,
    sessionId: string,
    input: ToolApprovalRequest,
    idempotent?: IdempotentRequest,
  ): Promise<IdempotentResult<{ toolApproval: ToolApprovalView }>> {
    // Read before the transaction: on PGlite's one connection, a read outside it would wait for it.
    const rules = await this.policy.toolApproval(principal.organizationId);
    return this.idempotency.run(
      principal,
      idempotent,
      async (manager) => {
        const session = await this.work.lockTurn(manager, principal, sessionId, input.turnId);
        if (session.turnInterruptedAt) throw interruptedError(sessionId, input.turnId);
        const now = new Date();
        const timeout = approvalTimeoutSeconds(rules, session.settings.toolApproval);
        const approval = Object.assign(new ToolApprovalEntity(), {
          id: newId(),
          organizationId: principal.organizationId,
          sessionId: session.id,
          turnId: session.turnId!,
          toolName: input.toolName,
          toolCallId: input.toolCallId ?? null,
          summary: input.summary,
          input: input.input ?? {},
          status: ToolApprovalStatus.Pending,
          message: null,
          requestedAt: now,
          expiresAt: new Date(now.getTime() + timeout * 1000),
          resolvedAt: null,
          resolvedBy: null,
        });
        await this.repository.insertToolApproval(manager, approval);
        this.events.raise(manager, {
          type: 'tool_approval.requested',
          organizationId: principal.organizationId,
          sessionId: session.id,
          actor: eventActorOf(principal),
          data: {
            sessionId: session.id,
            approvalId: approval.id,
            turnId: approval.turnId,
            toolName: approval.toolName,
            toolCallId: approval.toolCallId,
            summary: approval.summary,
            expiresAt: approval.expiresAt.getTime(),
          },
        });
        return { toolApproval: toToolApprovalView(approval) };
      },
      201,
    );
  }

  /**
   * The approval, for the agent that asked, once it has its answer, or as it is after `waitMs` (a
   * long poll, at most 30 s). Past its timeout it is answered `expired`. 409 `turn_not_active` when
   * the turn is over.
   */
  async await(
    principal: Principal,
    sessionId: string,
    approvalId: string,
    query: { turnId: string; waitMs: number },
    abandoned?: AbortSignal,
  ): Promise<{ toolApproval: ToolApprovalView }> {
    const deadline = Date.now() + Math.min(query.waitMs, MAX_APPROVAL_WAIT_MS);
    let release: (() => void) | undefined;
    try {
      for (;;) {
        const wake = this.open(sessionId.toLowerCase());
        try {
          const approval = await this.look(principal, sessionId, approvalId, query.turnId);
          const left = deadline - Date.now();
          if (approval.status !== ToolApprovalStatus.Pending || left <= 0 || abandoned?.aborted) return { toolApproval: toToolApprovalView(approval) };
          // A wait counts against the same caps as waiting claims.
          release ??= this.slots.acquire(principal, principal.credential.kind === 'computer' ? principal.credential.computerId : null);
          await wake.until(Math.min(left, approval.expiresAt.getTime() - Date.now() + 1), abandoned);
        } finally {
          wake.close();
        }
      }
    } finally {
      release?.();
    }
  }

  /** The approval as it stands, written `expired` when its time is up; the turn must still be the caller's. */
  private async look(principal: Principal, sessionId: string, approvalId: string, turnId: string): Promise<ToolApprovalEntity> {
    const session = isUuid(sessionId) ? await this.repository.findSession(sessionId, principal.organizationId) : null;
    if (!session || !mayWorkOn(principal, session)) throw notFound(sessionId);
    const found = isUuid(approvalId) ? await this.repository.findToolApproval(session.id, principal.organizationId, approvalId.toLowerCase()) : null;
    if (!found || !isUuid(turnId) || found.turnId !== turnId.toLowerCase()) {
      throw new SessionsError(SessionsErrorCode.ToolApprovalNotFound, `No tool approval ${approvalId} of turn ${turnId} exists in session ${sessionId}.`);
    }
    if (found.status !== ToolApprovalStatus.Pending) return found;
    if (session.status !== SessionStatus.Running || session.turnId !== found.turnId) {
      throw new SessionsError(SessionsErrorCode.TurnNotActive, `Turn ${turnId} is not the running turn of session ${sessionId}.`, { sessionStatus: session.status });
    }
    if (found.expiresAt.getTime() > Date.now()) return found;
    return this.repository.transaction(async (manager) => {
      await this.repository.findSession(session.id, principal.organizationId, manager, true);
      const locked = await this.repository.findToolApproval(session.id, principal.organizationId, found.id, manager, true);
      if (!locked || locked.status !== ToolApprovalStatus.Pending) return locked ?? found;
      return this.ledger.resolve(manager, locked, ToolApprovalStatus.Expired, SYSTEM);
    });
  }

  /**
   * One sweep: ends interrupted turns whose agent let the grace pass (the session becomes `idle`),
   * and writes down approvals nobody answered in time as `expired`. Safe on many instances: rows
   * another instance holds are skipped.
   */
  async sweep(now = new Date()): Promise<{ turnsEnded: number; approvalsExpired: number }> {
    let turnsEnded = 0;
    let approvalsExpired = 0;
    for (let batch = SWEEP_BATCH; batch === SWEEP_BATCH; ) {
      batch = await this.repository.transaction(async (manager) => {
        const lapsed = await this.repository.lockLapsedInterruptedTurns(manager, now, SWEEP_BATCH);
        for (const session of lapsed) {
          await this.ledger.cancelPending(manager, session.id, SYSTEM);
          const ended = await this.repository.endTurn(manager, session.id, { status: SessionStatus.Idle, now, activeTimeMs: 0 });
          assertTransition(SessionTrigger.InterruptedTurnLapsed, session.status, ended.status);
          this.events.raise(manager, {
            type: 'session.status_changed',
            organizationId: session.organizationId,
            sessionId: session.id,
            actor: SYSTEM,
            data: { sessionId: session.id, from: session.status, to: ended.status },
          });
        }
        return lapsed.length;
      });
      turnsEnded += batch;
    }
    for (let batch = SWEEP_BATCH; batch === SWEEP_BATCH; ) {
      const due = await this.repository.dueToolApprovals(now, SWEEP_BATCH);
      let expiredNow = 0;
      for (const approval of due) {
        // The session's lock first, then the approval's: the order every other writer takes.
        const expired = await this.repository.transaction(async (manager) => {
          await this.repository.findSession(approval.sessionId, approval.organizationId, manager, true);
          const locked = await this.repository.findToolApproval(approval.sessionId, approval.organizationId, approval.id, manager, true);
          if (!locked || locked.status !== ToolApprovalStatus.Pending) return false;
          await this.ledger.resolve(manager, locked, ToolApprovalStatus.Expired, SYSTEM);
          return true;
        });
        if (expired) expiredNow++;
      }
      approvalsExpired += expiredNow;
      // A full batch of which none could be expired (another instance took them all) ends the sweep too.
      batch = expiredNow === SWEEP_BATCH ? SWEEP_BATCH : 0;
    }
    return { turnsEnded, approvalsExpired };
  }

  @OnDomainEvent('tool_approval.resolved')
  onResolved(event: StoredEvent<'tool_approval.resolved'>): void {
    this.wake(event.data.sessionId);
  }

  @OnDomainEvent('turn.interrupted')
  onInterrupted(event: StoredEvent<'turn.interrupted'>): void {
    this.wake(event.data.sessionId);
  }

  private wake(sessionId: string): void {
    for (const waiter of this.waiters.get(sessionId) ?? []) waiter();
  }

  /** A wait on the session's approvals, opened before looking so that an answer during the look is not missed. */
  private open(sessionId: string): { until(ms: number, abandoned?: AbortSignal): Promise<void>; close(): void } {
    let woken = false;
    let release: (() => void) | null = null;
    const waiter = () => {
      woken = true;
      release?.();
    };
    const set = this.waiters.get(sessionId) ?? new Set();
    set.add(waiter);
    this.waiters.set(sessionId, set);
    return {
      until: (ms, abandoned) =>
        new Promise<void>((resolve) => {
          if (woken || abandoned?.aborted) return resolve();
          const timer = setTimeout(() => release?.(), Math.max(ms, 0));
          const onAbort = () => release?.();
          abandoned?.addEventListener('abort', onAbort, { once: true });
          release = () => {
            clearTimeout(timer);
            abandoned?.removeEventListener('abort', onAbort);
            release = null;
            resolve();
          };
        }),
      close: () => {
        set.delete(waiter);
        if (set.size === 0 && this.waiters.get(sessionId) === set) this.waiters.delete(sessionId);
      },
    };
  }
}

/** A readable session the caller may not change answers 403. */
function writable<S extends { organizationId: string; ownerId: string }>(principal: Principal, session: S): S {
  if (!AccessPolicy.canWrite(principal, session)) {
    throw new SessionsError(
      SessionsErrorCode.ReadOnlyRole,
      principal.role === Role.Guest ? 'Guests can read their sessions but not change them.' : 'Members can change only their own sessions; this one belongs to someone else.',
    );
  }
  return session;
}

function notFound(sessionId: string): SessionsError {
  return new SessionsError(SessionsErrorCode.SessionNotFound, `No session ${sessionId} exists in your organization.`);
}

export function interruptedError(sessionId: string, turnId: string): SessionsError {
  return new SessionsError(
    SessionsErrorCode.TurnInterrupted,
    `Turn ${turnId} of session ${sessionId} was interrupted by a user: stop, append what you have and end the turn.`,
  );
}
