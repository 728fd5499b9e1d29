import { Logger } from '@nestjs/common';

/** The security-relevant actions an operator must be able to audit from the logs alone. */
export type SecurityAction =
  | 'api_key.created'
  | 'member.added'
  | 'member.changed'
  | 'member.removed'
  | 'setup.completed'
  | 'api_key.revoked'
  | 'controls.revised'
  | 'computer.created'
  | 'computer.deleted'
  | 'computer.agent_token.issued'
  | 'computer.agent_token.released'
  | 'worker_pool.created'
  | 'worker_pool.deleted'
  | 'enrollment_token.created'
  | 'enrollment_token.revoked'
  | 'worker.registered'
  | 'worker.registration_refused'
  | 'worker.ended'
  | 'quota.exceeded'
  | 'rate_limit.exceeded'
  | 'relay.destination_refused'
  | 'relay.caller_refused'
  | 'relay.mcp_tool_refused'
  | 'mcp_oauth.sign_in_started'
  | 'mcp_oauth.connected'
  | 'mcp_oauth.disconnected'
  | 'mcp_oauth.refresh_failed'
  | 'webhook.destination_refused'
  | 'webhook.created'
  | 'webhook.updated'
  | 'webhook.deleted'
  | 'webhook.secret_rotated'
  | 'sandbox.egress_refused'
  | 'sandbox.limit_exceeded';

/** Who did it: ids only, never a key, token or body. */
export interface SecurityActor {
  organizationId?: string;
  userId?: string;
  /** The credential used: an API key id, `computer:<id>` or `jwt:<user id>` (see credentialIdOf). */
  credentialId?: string;
  /** The client address, for actions without a credential. */
  ip?: string;
}

const logger = new Logger('Security');

/**
 * One structured line per security-relevant action, with `security: <action>` to filter on.
 * `details` must hold ids, names and numbers only: it is logged as given.
 */
export function logSecurityEvent(
  action: SecurityAction,
  actor: SecurityActor,
  details: Record<string, string | number | boolean | null | undefined> = {},
): void {
  logger.log({ security: action, ...actor, ...details }, action);
}
