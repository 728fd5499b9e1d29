import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Sql } from '../../platform/database/sql';
import { EventActor } from '../../platform/events';
import { ToolApprovalEntity } from './entities';
import { ToolApprovalStatus } from './domain/tool-approval';
import { Row, SessionKey, SessionShapes } from './session-rows';

/** The SQL of tool approvals (each keeps its session's count of pending ones in step). */
@Injectable()
export class ToolApprovalsRepository {
  constructor(
    private readonly sql: Sql,
    private readonly shapes: SessionShapes,
  ) {}

  async insertToolApproval(manager: EntityManager, a: ToolApprovalEntity): Promise<void> {
    await this.sql.in(manager).query(
      'toolApprovals.insert',
      `WITH counted AS (UPDATE sessions SET pending_tool_approvals = pending_tool_approvals + 1 WHERE organization_id = $2 AND id = $3)
       INSERT INTO tool_approvals (id, organization_id, session_id, turn_id, tool_name, tool_call_id, summary, input, status, requested_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [a.id, a.organizationId, a.sessionId, a.turnId, a.toolName, a.toolCallId, a.summary, JSON.stringify(a.input), a.status, a.requestedAt, a.expiresAt],
    );
  }

  /** One approval of a session of the organization (locked when asked). */
  async findToolApproval(
    sessionId: string,
    organizationId: string,
    approvalId: string,
    manager?: EntityManager,
    lock = false,
  ): Promise<ToolApprovalEntity | null> {
    const rows = await this.sql
      .in(manager)
      .query<Row>(
        lock ? 'toolApprovals.findForUpdate' : 'toolApprovals.find',
        `SELECT ${this.shapes.approval.columns} FROM tool_approvals a WHERE a.id = $1 AND a.session_id = $2 AND a.organization_id = $3${lock ? ' FOR UPDATE' : ''}`,
        [approvalId, sessionId, organizationId],
      );
    return rows.length > 0 ? this.shapes.approval.from(rows[0]) : null;
  }

  /** The session's approvals waiting for an answer, oldest first (at most `limit`). */
  async pendingToolApprovals(session: SessionKey, limit: number, manager?: EntityManager): Promise<ToolApprovalEntity[]> {
    const rows = await this.sql.in(manager).query<Row>(
      'toolApprovals.pending',
      `SELECT ${this.shapes.approval.columns} FROM tool_approvals a
         WHERE a.session_id = $1 AND a.organization_id = $3 AND a.status = 'pending' ORDER BY a.requested_at, a.id LIMIT $2`,
      [session.id, limit, session.organizationId],
    );
    return rows.map((row) => this.shapes.approval.from(row));
  }

  /** Locks a turn's approvals still waiting (to cancel them when the turn ends). */
  async lockPendingToolApprovalsOfSession(manager: EntityManager, session: SessionKey): Promise<ToolApprovalEntity[]> {
    const rows = await this.sql.in(manager).query<Row>(
      'toolApprovals.pendingForUpdate',
      `SELECT ${this.shapes.approval.columns} FROM tool_approvals a
         WHERE a.session_id = $1 AND a.organization_id = $2 AND a.status = 'pending' ORDER BY a.requested_at, a.id FOR UPDATE`,
      [session.id, session.organizationId],
    );
    return rows.map((row) => this.shapes.approval.from(row));
  }

  /** Approvals still pending past their timeout, oldest first (callers lock each, session first). */
  async dueToolApprovals(now: Date, limit: number): Promise<ToolApprovalEntity[]> {
    const rows = await this.sql.query<Row>(
      'toolApprovals.due',
      `SELECT ${this.shapes.approval.columns} FROM tool_approvals a WHERE a.status = 'pending' AND a.expires_at <= $1 ORDER BY a.expires_at LIMIT $2`,
      [now, limit],
    );
    return rows.map((row) => this.shapes.approval.from(row));
  }

  /** Gives a pending approval its final status, and takes it off the session's count. */
  async resolveToolApproval(
    manager: EntityManager,
    approval: ToolApprovalEntity,
    outcome: { status: ToolApprovalStatus; message: string | null; at: Date; by: EventActor | null },
  ): Promise<ToolApprovalEntity> {
    const [row] = await this.sql.in(manager).query<Row>(
      'toolApprovals.resolve',
      `WITH counted AS (UPDATE sessions SET pending_tool_approvals = GREATEST(pending_tool_approvals - 1, 0) WHERE organization_id = $7 AND id = $6)
       UPDATE tool_approvals a SET status = $2, message = $3, resolved_at = $4, resolved_by = $5
       WHERE a.organization_id = $7 AND a.id = $1 AND a.status = 'pending' RETURNING ${this.shapes.approval.columns}`,
      [approval.id, outcome.status, outcome.message, outcome.at, outcome.by ? JSON.stringify(outcome.by) : null, approval.sessionId, approval.organizationId],
    );
    return this.shapes.approval.from(row);
  }
}
