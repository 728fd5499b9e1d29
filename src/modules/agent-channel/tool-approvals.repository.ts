import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { RowShape } from '../../platform/database/row-shape';
import { Sql } from '../../platform/database/sql';
import { EventActor } from '../../platform/events';
import { SessionKey, ToolApprovalStatus } from '../sessions';
import { ToolApprovalEntity } from './entities';

const APPROVAL_FIELDS = [
  'id',
  'organizationId',
  'sessionId',
  'turnId',
  'toolName',
  'toolCallId',
  'summary',
  'input',
  'status',
  'message',
  'requestedAt',
  'expiresAt',
  'resolvedAt',
  'resolvedBy',
] as const;

type Row = Record<string, unknown>;

/** The SQL of tool approvals. (The session's count of pending ones is Sessions': callers keep it in step, see ToolApprovalLedger.) */
@Injectable()
export class ToolApprovalsRepository {
  private readonly approval: RowShape<ToolApprovalEntity, (typeof APPROVAL_FIELDS)[number]>;

  constructor(
    private readonly sql: Sql,
    dataSource: DataSource,
  ) {
    this.approval = RowShape.of(dataSource, ToolApprovalEntity, 'a', APPROVAL_FIELDS);
  }

  async insertToolApproval(manager: EntityManager, a: ToolApprovalEntity): Promise<void> {
    await this.sql.in(manager).query(
      'toolApprovals.insert',
      `INSERT INTO tool_approvals (id, organization_id, session_id, turn_id, tool_name, tool_call_id, summary, input, status, requested_at, expires_at)
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
        `SELECT ${this.approval.columns} FROM tool_approvals a WHERE a.id = $1 AND a.session_id = $2 AND a.organization_id = $3${lock ? ' FOR UPDATE' : ''}`,
        [approvalId, sessionId, organizationId],
      );
    return rows.length > 0 ? this.approval.from(rows[0]) : null;
  }

  /** The session's approvals waiting for an answer, oldest first (at most `limit`). */
  async pendingToolApprovals(session: SessionKey, limit: number, manager?: EntityManager): Promise<ToolApprovalEntity[]> {
    const rows = await this.sql.in(manager).query<Row>(
      'toolApprovals.pending',
      `SELECT ${this.approval.columns} FROM tool_approvals a
         WHERE a.session_id = $1 AND a.organization_id = $3 AND a.status = 'pending' ORDER BY a.requested_at, a.id LIMIT $2`,
      [session.id, limit, session.organizationId],
    );
    return rows.map((row) => this.approval.from(row));
  }

  /** Locks a turn's approvals still waiting (to cancel them when the turn ends). */
  async lockPendingToolApprovalsOfSession(manager: EntityManager, session: SessionKey): Promise<ToolApprovalEntity[]> {
    const rows = await this.sql.in(manager).query<Row>(
      'toolApprovals.pendingForUpdate',
      `SELECT ${this.approval.columns} FROM tool_approvals a
         WHERE a.session_id = $1 AND a.organization_id = $2 AND a.status = 'pending' ORDER BY a.requested_at, a.id FOR UPDATE`,
      [session.id, session.organizationId],
    );
    return rows.map((row) => this.approval.from(row));
  }

  /** Approvals still pending past their timeout, oldest first (callers lock each, session first). */
  async dueToolApprovals(now: Date, limit: number): Promise<ToolApprovalEntity[]> {
    const rows = await this.sql.query<Row>(
      'toolApprovals.due',
      `SELECT ${this.approval.columns} FROM tool_approvals a WHERE a.status = 'pending' AND a.expires_at <= $1 ORDER BY a.expires_at LIMIT $2`,
      [now, limit],
    );
    return rows.map((row) => this.approval.from(row));
  }

  /** Gives a pending approval its final status. */
  async resolveToolApproval(
    manager: EntityManager,
    approval: ToolApprovalEntity,
    outcome: { status: ToolApprovalStatus; message: string | null; at: Date; by: EventActor | null },
  ): Promise<ToolApprovalEntity> {
    const [row] = await this.sql.in(manager).query<Row>(
      'toolApprovals.resolve',
      `UPDATE tool_approvals a SET status = $2, message = $3, resolved_at = $4, resolved_by = $5
       WHERE a.organization_id = $6 AND a.id = $1 AND a.status = 'pending' RETURNING ${this.approval.columns}`,
      [approval.id, outcome.status, outcome.message, outcome.at, outcome.by ? JSON.stringify(outcome.by) : null, approval.organizationId],
    );
    return this.approval.from(row);
  }
}
