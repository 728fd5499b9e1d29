import { codesOf, CodeOf, errorClassOf, ErrorKind, ErrorTable } from '../../../platform/http/domain-error';

const ENTERPRISE_CONTROLS_ERRORS = {
  RevisionNotFound: { code: 'revision_not_found', kind: ErrorKind.NotFound },
  RevisionMismatch: { code: 'revision_mismatch', kind: ErrorKind.PreconditionFailed },
  SecretUnreadable: { code: 'secret_unreadable', kind: ErrorKind.Unavailable },
  CustomModelNotFound: { code: 'custom_model_not_found', kind: ErrorKind.NotFound },
  ModelNotAllowed: { code: 'model_not_allowed', kind: ErrorKind.Forbidden },
  ModelUnreachable: { code: 'model_unreachable', kind: ErrorKind.Unavailable },
  ModelAddressRefused: { code: 'model_address_refused', kind: ErrorKind.Forbidden },
  ModelRedirected: { code: 'model_redirected', kind: ErrorKind.BadGateway },
  ModelAnswerInvalid: { code: 'model_answer_invalid', kind: ErrorKind.BadGateway },
  ModelTimedOut: { code: 'model_timed_out', kind: ErrorKind.GatewayTimeout },
  TooManyRelays: { code: 'too_many_relays', kind: ErrorKind.TooManyRequests },
  /** The relay endpoint called speaks another API than the custom model's `provider`. */
  ModelApiMismatch: { code: 'model_api_mismatch', kind: ErrorKind.InvalidRequest },
  ModelNotCloud: { code: 'model_not_cloud', kind: ErrorKind.Conflict },
  McpServerNotFound: { code: 'mcp_server_not_found', kind: ErrorKind.NotFound },
  McpNotAllowed: { code: 'mcp_not_allowed', kind: ErrorKind.Forbidden },
  /** A `tools/call` of a tool the MCP server's `allowedTools` leaves out. */
  McpToolNotAllowed: { code: 'mcp_tool_not_allowed', kind: ErrorKind.Forbidden },
  McpTransportMismatch: { code: 'mcp_transport_mismatch', kind: ErrorKind.Conflict },
  McpAddressRefused: { code: 'mcp_address_refused', kind: ErrorKind.Forbidden },
  McpUnreachable: { code: 'mcp_unreachable', kind: ErrorKind.Unavailable },
  McpRedirected: { code: 'mcp_redirected', kind: ErrorKind.BadGateway },
  McpAnswerInvalid: { code: 'mcp_answer_invalid', kind: ErrorKind.BadGateway },
  McpTimedOut: { code: 'mcp_timed_out', kind: ErrorKind.GatewayTimeout },
  /** The MCP server asks for an OAuth sign-in that no admin made, or that must be made again. */
  McpOAuthRequired: { code: 'mcp_oauth_required', kind: ErrorKind.Conflict },
  /** Discovery, registration or a token exchange with the server's authorization server failed. */
  McpOAuthFailed: { code: 'mcp_oauth_failed', kind: ErrorKind.BadGateway },
} as const satisfies ErrorTable;

export const EnterpriseControlsErrorCode = codesOf(ENTERPRISE_CONTROLS_ERRORS);
export type EnterpriseControlsErrorCode = CodeOf<typeof ENTERPRISE_CONTROLS_ERRORS>;

export class EnterpriseControlsError extends errorClassOf(ENTERPRISE_CONTROLS_ERRORS) {}

export function revisionNotFound(revision: string): EnterpriseControlsError {
  return new EnterpriseControlsError(EnterpriseControlsErrorCode.RevisionNotFound, `Your organization's controls have no revision ${revision}.`, { revision });
}

export function customModelNotFound(customModelId: string): EnterpriseControlsError {
  return new EnterpriseControlsError(
    EnterpriseControlsErrorCode.CustomModelNotFound,
    `There is no custom model "${customModelId}" in your organization's controls.`,
    { customModelId },
  );
}

export function mcpServerNotFound(serverName: string): EnterpriseControlsError {
  return new EnterpriseControlsError(EnterpriseControlsErrorCode.McpServerNotFound, `There is no MCP server "${serverName}" in your organization's controls.`, {
    serverName,
  });
}
