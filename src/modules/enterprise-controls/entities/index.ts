export { ControlRevisionEntity } from './control-revision.entity';
export { McpOAuthConnectionEntity } from './mcp-oauth-connection.entity';
export type { McpOAuthStatus } from './mcp-oauth-connection.entity';
