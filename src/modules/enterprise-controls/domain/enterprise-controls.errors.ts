import { DomainError, ErrorKind } from '../../../platform/http/domain-error';

export enum EnterpriseControlsErrorCode {
  RevisionNotFound = 'revision_not_found',
  RevisionMismatch = 'revision_mismatch',
  SecretUnreadable = 'secret_unreadable',
  CustomModelNotFound = 'custom_model_not_found',
  ModelNotAllowed = 'model_not_allowed',
  ModelUnreachable = 'model_unreachable',
  ModelAddressRefused = 'model_address_refused',
  ModelRedirected = 'model_redirected',
  ModelAnswerInvalid = 'model_answer_invalid',
  ModelTimedOut = 'model_timed_out',
  TooManyRelays = 'too_many_relays',
  /** The relay endpoint called speaks another API than the custom model's `provider`. */
  ModelApiMismatch = 'model_api_mismatch',
  ModelNotCloud = 'model_not_cloud',
  McpServerNotFound = 'mcp_server_not_found',
  McpNotAllowed = 'mcp_not_allowed',
  /** A `tools/call` of a tool the MCP server's `allowedTools` leaves out. */
  McpToolNotAllowed = 'mcp_tool_not_allowed',
  McpTransportMismatch = 'mcp_transport_mismatch',
  McpAddressRefused = 'mcp_address_refused',
  McpUnreachable = 'mcp_unreachable',
  McpRedirected = 'mcp_redirected',
  McpAnswerInvalid = 'mcp_answer_invalid',
  McpTimedOut = 'mcp_timed_out',
  /** The MCP server asks for an OAuth sign-in that no admin made, or that must be made again. */
  McpOAuthRequired = 'mcp_oauth_required',
  /** Discovery, registration or a token exchange with the server's authorization server failed. */
  McpOAuthFailed = 'mcp_oauth_failed',
}

export class EnterpriseControlsError extends DomainError<EnterpriseControlsErrorCode> {
  get kind(): ErrorKind {
    switch (this.code) {
      case EnterpriseControlsErrorCode.RevisionNotFound:
        return ErrorKind.NotFound;
      case EnterpriseControlsErrorCode.RevisionMismatch:
        return ErrorKind.PreconditionFailed;
      case EnterpriseControlsErrorCode.SecretUnreadable:
      case EnterpriseControlsErrorCode.ModelUnreachable:
      case EnterpriseControlsErrorCode.McpUnreachable:
        return ErrorKind.Unavailable;
      case EnterpriseControlsErrorCode.CustomModelNotFound:
      case EnterpriseControlsErrorCode.McpServerNotFound:
        return ErrorKind.NotFound;
      case EnterpriseControlsErrorCode.McpTransportMismatch:
      case EnterpriseControlsErrorCode.ModelNotCloud:
      case EnterpriseControlsErrorCode.McpOAuthRequired:
        return ErrorKind.Conflict;
      case EnterpriseControlsErrorCode.ModelNotAllowed:
      case EnterpriseControlsErrorCode.ModelAddressRefused:
      case EnterpriseControlsErrorCode.McpNotAllowed:
      case EnterpriseControlsErrorCode.McpToolNotAllowed:
      case EnterpriseControlsErrorCode.McpAddressRefused:
        return ErrorKind.Forbidden;
      case EnterpriseControlsErrorCode.ModelRedirected:
      case EnterpriseControlsErrorCode.ModelAnswerInvalid:
      case EnterpriseControlsErrorCode.McpRedirected:
      case EnterpriseControlsErrorCode.McpAnswerInvalid:
      case EnterpriseControlsErrorCode.McpOAuthFailed:
        return ErrorKind.BadGateway;
      case EnterpriseControlsErrorCode.ModelTimedOut:
      case EnterpriseControlsErrorCode.McpTimedOut:
        return ErrorKind.GatewayTimeout;
      case EnterpriseControlsErrorCode.TooManyRelays:
        return ErrorKind.TooManyRequests;
      case EnterpriseControlsErrorCode.ModelApiMismatch:
        return ErrorKind.InvalidRequest;
    }
  }
}

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
