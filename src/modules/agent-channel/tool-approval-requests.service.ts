import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable } from '@nestjs/common';
import { eventActorOf, Principal } from '../auth';
import { EventLog } from '../../platform/events';
import { newId } from '../../platform/database/ids';
import { IdempotencyService, IdempotentRequest, IdempotentResult } from '../../platform/idempotency';
import { AgentWorkService } from './agent-work.service';
import { ToolApprovalEntity } from './entities';
import { ToolApprovalLedger } from './tool-approval-ledger';
import { SessionPolicy, ToolApprovalStatus, approvalTimeoutSeconds, interruptedError } from '../sessions';
import { ToolApprovalView, toToolApprovalView } from './tool-approval-view';

export type ToolApprovalRequest = ApiSchema<'RequestToolApprovalBody'>;

/** The agent's side of a person in the loop: it asks a person to approve a tool call of its running turn. */
@Injectable()
export class ToolApprovalRequests {
  constructor(
    private readonly ledger: ToolApprovalLedger,
    private readonly work: AgentWorkService,
    private readonly policy: SessionPolicy,
    private readonly idempotency: IdempotencyService,
    private readonly events: EventLog,
  ) {}

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
        await this.ledger.open(manager, approval);
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
}
