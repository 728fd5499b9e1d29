import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/** Where an MCP server's OAuth sign-in is: started and waiting for its callback, connected, or needing a new sign-in. */
export type McpOAuthStatus = 'pending' | 'connected' | 'reconnect_needed';

/**
 * The OAuth sign-in an admin made for one of the organization's HTTP MCP servers: what the relay needs to send
 * its requests with a bearer token. Bound to the server's `url` at sign-in: a server whose url changes is not
 * signed in any more. The client registration, the tokens and the PKCE verifier are one SecretBox envelope.
 */
@Entity({ name: 'mcp_oauth_connections' })
export class McpOAuthConnectionEntity {
  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'mcp_oauth_connections_pkey' })
  @ForeignKey('OrganizationEntity', { name: 'mcp_oauth_connections_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId: string;

  @PrimaryColumn({ name: 'server_name', type: 'varchar', length: 64, primaryKeyConstraintName: 'mcp_oauth_connections_pkey' })
  serverName: string;

  @Column({ name: 'server_url', type: 'text' })
  serverUrl: string;

  @Column({ type: 'varchar', length: 16 })
  status: McpOAuthStatus;

  /** SHA-256 of the `state` of a sign-in under way: the callback finds its connection by it. */
  @Index('mcp_oauth_connections_state_hash_key', { unique: true })
  @Column({ name: 'state_hash', type: 'varchar', length: 64, nullable: true })
  stateHash: string | null;

  /** A sign-in under way is refused after this. */
  @Column({ name: 'pending_until', type: 'timestamptz', precision: 3, nullable: true })
  pendingUntil: Date | null;

  /** A SecretBox envelope of the JSON of StoredOAuthSecrets. */
  @Column({ type: 'text' })
  secrets: string;

  /** What discovery found (the authorization server and its metadata): public documents, kept so a refresh need not look again. */
  @Column({ type: 'json', nullable: true })
  discovery: Record<string, unknown> | null;

  @Column({ type: 'text', nullable: true })
  scope: string | null;

  /** When the access token stops working (null: it did not say). */
  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'connected_at', type: 'timestamptz', precision: 3, nullable: true })
  connectedAt: Date | null;

  /** The admin who signed in (kept if the user is removed: the tokens are theirs). */
  @Column({ name: 'connected_by', type: 'uuid' })
  connectedBy: string;

  /** Why the last sign-in or refresh failed, in a sentence. */
  @Column({ type: 'text', nullable: true })
  problem: string | null;

  @Column({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
