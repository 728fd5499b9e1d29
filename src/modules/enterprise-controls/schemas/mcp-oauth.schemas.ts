import { closedObject, NO_CONTROL_CHARACTERS, ref, SchemaRegistry } from '../../../platform/http/json-schema';

const text = (maxLength: number, description: string) => ({ type: 'string', minLength: 1, maxLength, pattern: NO_CONTROL_CHARACTERS, description });
const time = (description: string) => ({ type: 'string', format: 'date-time', nullable: true, description });

/** The OAuth sign-ins to HTTP MCP servers: what an admin sends and reads, and what the authorization server sends back. */
export const mcpOAuthSchemas = new SchemaRegistry('mcp-oauth').add({
  StartMcpOAuthBody: closedObject(
    [],
    {
      clientId: text(
        512,
        "A client the MCP server's authorization server already knows (registered for the redirect URI `{base_url}/api/v0/mcp-oauth/callback`); without it the server registers itself (OAuth dynamic client registration), or reuses the registration of an earlier sign-in.",
      ),
      clientSecret: text(2048, "That client's secret, for a confidential client. Kept encrypted; never answered."),
      scope: text(1024, "The scope to ask for, space-separated; by default the one the MCP server's metadata lists."),
    },
    'How to sign in. Every field is optional.',
  ),
  McpOAuthConnection: closedObject(
    ['serverName', 'status', 'url', 'scope', 'expiresAt', 'connectedAt', 'connectedBy', 'problem'],
    {
      serverName: { type: 'string' },
      status: {
        type: 'string',
        enum: ['not_connected', 'pending', 'connected', 'reconnect_needed'],
        description:
          '`pending`: a sign-in was started and its callback has not come (a connection made before keeps working meanwhile); ' +
          '`reconnect_needed`: the last sign-in failed or the token could not be refreshed (`problem` says why), and the relay answers 409 `mcp_oauth_required` until an admin signs in again.',
      },
      url: {
        type: 'string',
        description: "The server's `url`: a sign-in holds for the url it was made for, and a server whose url changes is `not_connected`.",
      },
      scope: { type: 'string', nullable: true, description: 'The scope the authorization server granted.' },
      expiresAt: time('When the access token ends; the server refreshes it before then (a minute ahead) and when the MCP server refuses it.'),
      connectedAt: time('When an admin last signed in.'),
      connectedBy: { type: 'string', format: 'uuid', nullable: true, description: 'The user id of that admin.' },
      problem: { type: 'string', nullable: true, description: 'Why the last sign-in or refresh failed, in a sentence.' },
    },
    "An MCP server's OAuth sign-in, without its tokens (no answer ever holds them).",
  ),
  StartedMcpOAuth: closedObject(
    ['authorizationUrl', 'connection'],
    {
      authorizationUrl: {
        type: 'string',
        description:
          "Open it in the admin's browser (within 10 minutes): the authorization server signs them in and sends the browser back to this server's callback.",
      },
      connection: ref('McpOAuthConnection'),
    },
    'A sign-in started.',
  ),
  McpOAuthCallbackQuery: {
    type: 'object',
    // The authorization server may add parameters of its own (`iss`, say): they are ignored.
    additionalProperties: { type: 'string', maxLength: 4096 },
    maxProperties: 20,
    properties: {
      state: { type: 'string', maxLength: 512 },
      code: { type: 'string', maxLength: 4096 },
      error: { type: 'string', maxLength: 256 },
      error_description: { type: 'string', maxLength: 4096 },
    },
    description: "The authorization server's redirect: `code` and `state`, or `error`.",
  },
});
