import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EventActor, EventLog } from '../../platform/events';
import { ToolApprovalEntity } from './entities';
import { ToolApprovalStatus } from './domain/tool-approval';
import { SessionKey } from './session-rows';
import { ToolApprovalsRepository } from './tool-approvals.repository';

/**
 * Gives tool approvals their final status, with the `tool_approval.resolved` event in the same
 * transaction. Callers hold the session's row lock first (then the approval's), so a decision, a
 * timeout and the end of the turn never deadlock one another.
 */
@Injectable()
export class ToolApprovalLedger {
  constructor(
    private readonly approvals: ToolApprovalsRepository,
    private readonly events: EventLog,
  ) {}

  async resolve(
    manager: EntityManager,
    approval: ToolApprovalEntity,
    status: Exclude<ToolApprovalStatus, ToolApprovalStatus.Pending>,
    by: EventActor | null,
    message: string | null = null,
  ): Promise<ToolApprovalEntity> {
    const resolved = await this.approvals.resolveToolApproval(manager, approval, { status, message, at: new Date(), by });
    this.events.raise(manager, {
      type: 'tool_approval.resolved',
      organizationId: approval.organizationId,
      sessionId: approval.sessionId,
      actor: by,
      data: {
        sessionId: approval.sessionId,
        approvalId: approval.id,
        turnId: approval.turnId,
        toolName: approval.toolName,
        status,
        allowed: status === ToolApprovalStatus.Allowed,
        message,
      },
    });
    return resolved;
  }

  /** Cancels what the session's turn still waits for (it ended, was interrupted or taken over); the session is locked. */
  async cancelPending(manager: EntityManager, session: SessionKey, by: EventActor | null): Promise<number> {
    const pending = await this.approvals.lockPendingToolApprovalsOfSession(manager, session);
    for (const approval of pending) await this.resolve(manager, approval, ToolApprovalStatus.Cancelled, by);
    return pending.length;
  }
}
