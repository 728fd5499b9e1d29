import type { ApiSchema } from '../../platform/http/api-schema';
import type { ToolApprovalEntity } from './entities';

export type ToolApprovalView = ApiSchema<'ToolApproval'>;

export function toToolApprovalView(a: ToolApprovalEntity): ToolApprovalView {
  const view: ToolApprovalView = {
    approvalId: a.id,
    sessionId: a.sessionId,
    turnId: a.turnId,
    toolName: a.toolName,
    summary: a.summary,
    input: a.input,
    status: a.status,
    requestedAt: a.requestedAt.getTime(),
    expiresAt: a.expiresAt.getTime(),
  };
  if (a.toolCallId !== null) view.toolCallId = a.toolCallId;
  if (a.resolvedAt) view.resolvedAt = a.resolvedAt.getTime();
  if (a.message !== null) view.message = a.message;
  if (a.resolvedBy?.userId) view.resolvedBy = { userId: a.resolvedBy.userId };
  return view;
}
