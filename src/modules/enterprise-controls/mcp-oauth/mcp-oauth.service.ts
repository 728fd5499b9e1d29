import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { auth, type OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import { createHash, randomBytes } from 'node:crypto';
import { AllowedIps } from '../../../agent/sandbox/network-policy';
import { AppConfig } from '../../../config/app-config';
import type { ApiSchema } from '../../../platform/http/api-schema';
import { logSecurityEvent } from '../../../platform/logging/security-log';
import { OutboundClient } from '../../../platform/outbound/outbound-client';
import { FetchLike, outboundFetch } from '../../../platform/outbound/outbound-fetch';
import { DestinationRefused } from '../../../platform/outbound/outbound-guard';
import { SecretBox } from '../../../platform/secrets/secret-box';
import { Principal, securityActorOf } from '../../auth';
import { EnterpriseControlsError, EnterpriseControlsErrorCode, mcpServerNotFound } from '../domain/enterprise-controls.errors';
import { HttpMcpServer } from '../domain/settings';
import { McpOAuthConnectionEntity } from '../entities';
import { EnterpriseControlsService } from '../enterprise-controls.service';
import { McpOAuthRepository } from './mcp-oauth.repository';
import { SignInNeeded, StoredOAuthClient, StoredOAuthSecrets } from './stored-oauth-client';

/** The path the authorization server sends the admin's browser back to. */
export const MCP_OAUTH_CALLBACK_PATH = '/api/v0/mcp-oauth/callback';
/** How long a sign-in may take from its start to its callback. */
const SIGN_IN_MS = 10 * 60_000;
/** An access token this close to its end is refreshed before it is used. */
const REFRESH_AHEAD_MS = 60_000;
/** The most an authorization server's answer (metadata, registration, tokens) may hold. */
const OAUTH_ANSWER_BYTES = 256 * 1024;

export type McpOAuthView = ApiSchema<'McpOAuthConnection'>;

/** How a callback ended, for the console page it sends the browser to. */
export interface CallbackOutcome {
  serverName: string | null;
  connected: boolean;
  reason?: string;
}

/**
 * OAuth 2.1 sign-ins to the organization's HTTP MCP servers, made with the MCP SDK's own client (`auth()`:
 * discovery, dynamic registration or a given client, PKCE, code exchange, refresh). An admin signs in once;
 * the tokens are kept encrypted, refreshed here, and added by the relay to what it sends: no agent, answer or
 * log ever holds them. Every call to the authorization server keeps to the relay's address rules
 * (MCP_RELAY_ALLOWED_HOSTS, networkPolicy.allowedIps, no redirects).
 */
@Injectable()
export class McpOAuth implements OnModuleDestroy {
  private readonly outbound: OutboundClient;

  constructor(
    private readonly connections: McpOAuthRepository,
    private readonly controls: EnterpriseControlsService,
    private readonly box: SecretBox,
    private readonly config: AppConfig,
    adapterHost: HttpAdapterHost,
  ) {
    this.outbound = new OutboundClient(
      { config, adapterHost },
      { allowedHosts: config.mcpRelayAllowedHosts, allowedHostsVariable: 'MCP_RELAY_ALLOWED_HOSTS', maxSockets: 16 },
    );
  }

  onModuleDestroy(): void {
    this.outbound.close();
  }

  async view(principal: Principal, serverName: string): Promise<McpOAuthView> {
    const { server } = await this.httpServer(principal.organizationId, serverName);
    return viewOf(server, await this.connections.find(principal.organizationId, serverName));
  }

  /**
   * Starts a sign-in: the SDK discovers the server's authorization server, registers this server as a client
   * (unless `clientId` is given), and makes the authorization URL the admin's browser opens. The connection in
   * use (if any) keeps working until the callback replaces it.
   */
  async start(
    principal: Principal,
    serverName: string,
    request: { clientId?: string; clientSecret?: string; scope?: string },
  ): Promise<{ authorizationUrl: string; connection: McpOAuthView }> {
    const { server, allowedIps } = await this.httpServer(principal.organizationId, serverName);
    const row = await this.connections.find(principal.organizationId, serverName);
    const kept = row && row.serverUrl === server.url ? this.open(row) : {};
    const state = randomBytes(32).toString('base64url');
    const secrets: StoredOAuthSecrets = {
      ...kept,
      // A registration made for this url before is used again, unless the admin gives a client.
      clientInformation: request.clientId
        ? { client_id: request.clientId, ...(request.clientSecret ? { client_secret: request.clientSecret } : {}) }
        : kept.clientInformation,
      startedBy: principal.userId,
    };
    const client = new StoredOAuthClient({ ...secrets, tokens: undefined }, undefined, { redirectUrl: this.redirectUrl, scope: request.scope, state });
    await this.runAuth(principal.organizationId, serverName, server, allowedIps, client, { scope: request.scope });
    const authorizationUrl = client.authorizationUrl;
    if (!authorizationUrl || (authorizationUrl.protocol !== 'https:' && authorizationUrl.protocol !== 'http:')) {
      throw oauthFailed(serverName, 'its authorization server gave no http(s) address to sign in at');
    }
    const now = new Date();
    const saved = Object.assign(row ?? new McpOAuthConnectionEntity(), {
      organizationId: principal.organizationId,
      serverName,
      // A connection for another url is dropped now: its tokens were never for this one.
      ...(row && row.serverUrl === server.url ? {} : { status: 'pending', expiresAt: null, connectedAt: null, scope: null, connectedBy: principal.userId }),
      serverUrl: server.url,
      stateHash: hashOf(state),
      pendingUntil: new Date(now.getTime() + SIGN_IN_MS),
      secrets: this.seal(principal.organizationId, serverName, {
        ...secrets,
        codeVerifier: client.secrets.codeVerifier,
        clientInformation: client.secrets.clientInformation,
      }),
      discovery: (client.discovery as unknown as Record<string, unknown> | undefined) ?? null,
      problem: null,
      updatedAt: now,
    } satisfies Partial<McpOAuthConnectionEntity>);
    await this.connections.save(saved);
    logSecurityEvent('mcp_oauth.sign_in_started', securityActorOf(principal), { mcpServer: serverName });
    return { authorizationUrl: authorizationUrl.href, connection: viewOf(server, saved) };
  }

  /** The authorization server's redirect back: the code is exchanged (once, within SIGN_IN_MS) and the tokens kept. */
  async callback(query: { state?: string; code?: string; error?: string; error_description?: string }): Promise<CallbackOutcome> {
    if (!query.state) return { serverName: null, connected: false, reason: 'the answer has no state' };
    const stateHash = hashOf(query.state);
    const found = await this.connections.byStateHash(stateHash);
    if (!found) return { serverName: null, connected: false, reason: 'this sign-in is unknown or was already used' };
    // Read before the transaction: the embedded database has one connection, which the transaction holds.
    const current = await this.httpServer(found.organizationId, found.serverName).catch(() => null);
    return this.connections.transaction(async (manager) => {
      const row = await this.connections.findLocked(manager, found.organizationId, found.serverName);
      if (!row || row.stateHash !== stateHash) return { serverName: null, connected: false, reason: 'this sign-in is unknown or was already used' };
      const fail = async (reason: string): Promise<CallbackOutcome> => {
        Object.assign(row, { stateHash: null, pendingUntil: null, problem: `The last sign-in failed: ${reason}.`, updatedAt: new Date() });
        if (row.status === 'pending') row.status = 'reconnect_needed';
        await this.connections.save(row, manager);
        return { serverName: row.serverName, connected: false, reason };
      };
      if (!row.pendingUntil || row.pendingUntil.getTime() < Date.now()) return fail(`it took longer than ${SIGN_IN_MS / 60_000} minutes`);
      if (query.error)
        return fail(`the authorization server answered ${query.error}${query.error_description ? ` (${query.error_description.slice(0, 200)})` : ''}`);
      if (!query.code) return fail('the answer has no code');
      if (!current) return fail("the MCP server is no longer among the organization's HTTP mcpServers");
      const { server, allowedIps } = current;
      if (server.url !== row.serverUrl) return fail("the MCP server's url changed during the sign-in");
      const secrets = this.open(row);
      const client = new StoredOAuthClient({ ...secrets, tokens: undefined }, (row.discovery ?? undefined) as unknown as OAuthDiscoveryState | undefined, {
        redirectUrl: this.redirectUrl,
      });
      try {
        await this.runAuth(row.organizationId, row.serverName, server, allowedIps, client, { authorizationCode: query.code });
      } catch (error) {
        return fail((error as Error).message);
      }
      const tokens = client.secrets.tokens;
      const now = new Date();
      Object.assign(row, {
        status: 'connected',
        stateHash: null,
        pendingUntil: null,
        secrets: this.seal(row.organizationId, row.serverName, { clientInformation: client.secrets.clientInformation, tokens }),
        discovery: (client.discovery as unknown as Record<string, unknown> | undefined) ?? null,
        scope: tokens?.scope ?? null,
        expiresAt: expiryOf(tokens?.expires_in, now),
        connectedAt: now,
        connectedBy: secrets.startedBy ?? row.connectedBy,
        problem: null,
        updatedAt: now,
      } satisfies Partial<McpOAuthConnectionEntity>);
      await this.connections.save(row, manager);
      logSecurityEvent('mcp_oauth.connected', { organizationId: row.organizationId, userId: row.connectedBy }, { mcpServer: row.serverName });
      return { serverName: row.serverName, connected: true };
    });
  }

  async disconnect(principal: Principal, serverName: string): Promise<void> {
    await this.httpServer(principal.organizationId, serverName);
    await this.connections.remove(principal.organizationId, serverName);
    logSecurityEvent('mcp_oauth.disconnected', securityActorOf(principal), { mcpServer: serverName });
  }

  /**
   * The access token the relay sends to `server` (its secrets revealed), refreshed first when it is about to end or
   * when the server refused `rejected` (the token it was sent); null when no admin signed in to it. A connection
   * that needs a new sign-in is 409 `mcp_oauth_required`.
   */
  async accessToken(organizationId: string, server: HttpMcpServer, allowedIps: AllowedIps | null, rejected?: string): Promise<string | null> {
    const row = await this.connections.find(organizationId, server.name);
    if (!row || row.serverUrl !== server.url || row.status === 'pending') return null;
    if (row.status === 'reconnect_needed') throw oauthRequired(server.name, row.problem ?? undefined);
    const token = this.open(row).tokens?.access_token;
    if (token && token !== rejected && !endsSoon(row.expiresAt)) return token;
    // The failure is kept (committed) before it is answered: the transaction returns it rather than throwing.
    const refreshed = await this.connections.transaction(async (manager): Promise<{ token: string } | { problem: string }> => {
      const locked = await this.connections.findLocked(manager, organizationId, server.name);
      if (!locked || locked.serverUrl !== server.url || locked.status !== 'connected') return { problem: locked?.problem ?? 'no admin is signed in to it' };
      const secrets = this.open(locked);
      // Another request (or instance) refreshed it meanwhile.
      const current = secrets.tokens?.access_token;
      if (current && current !== token && current !== rejected && !endsSoon(locked.expiresAt)) return { token: current };
      const client = new StoredOAuthClient({ ...secrets }, (locked.discovery ?? undefined) as unknown as OAuthDiscoveryState | undefined, {
        redirectUrl: this.redirectUrl,
      });
      try {
        await this.runAuth(organizationId, server.name, server, allowedIps, client);
      } catch (error) {
        if (error instanceof EnterpriseControlsError && error.code !== EnterpriseControlsErrorCode.McpOAuthFailed) throw error;
        const reason = error instanceof SignInNeeded ? 'the authorization server would not refresh the token' : (error as Error).message;
        Object.assign(locked, { status: 'reconnect_needed', problem: `The token could not be refreshed: ${reason}.`, updatedAt: new Date() });
        await this.connections.save(locked, manager);
        logSecurityEvent('mcp_oauth.refresh_failed', { organizationId }, { mcpServer: server.name, reason });
        return { problem: locked.problem! };
      }
      const tokens = client.secrets.tokens!;
      const now = new Date();
      Object.assign(locked, {
        secrets: this.seal(organizationId, server.name, { clientInformation: client.secrets.clientInformation, tokens }),
        discovery: (client.discovery as unknown as Record<string, unknown> | undefined) ?? null,
        scope: tokens.scope ?? locked.scope,
        expiresAt: expiryOf(tokens.expires_in, now),
        updatedAt: now,
      } satisfies Partial<McpOAuthConnectionEntity>);
      await this.connections.save(locked, manager);
      return { token: tokens.access_token };
    });
    if ('problem' in refreshed) throw oauthRequired(server.name, refreshed.problem);
    return refreshed.token;
  }

  private get redirectUrl(): string {
    return `${this.config.baseUrl}${MCP_OAUTH_CALLBACK_PATH}`;
  }

  /** The SDK's `auth()` under the address rules; its failures become this module's errors (the SDK's SignInNeeded passes through). */
  private async runAuth(
    organizationId: string,
    serverName: string,
    server: HttpMcpServer,
    allowedIps: AllowedIps | null,
    client: StoredOAuthClient,
    options: { authorizationCode?: string; scope?: string } = {},
  ): Promise<void> {
    const fetchFn: FetchLike = outboundFetch(this.outbound, { allowedIps, timeoutMs: this.config.MODEL_RELAY_TIMEOUT_MS, maxBytes: OAUTH_ANSWER_BYTES });
    try {
      // `scope` first: the SDK otherwise takes the scopes the server's metadata lists over the client's own.
      await auth(client, { serverUrl: server.url, ...options, fetchFn });
    } catch (error) {
      if (error instanceof SignInNeeded) throw error;
      if (error instanceof DestinationRefused) {
        logSecurityEvent('relay.destination_refused', { organizationId }, { mcpServer: serverName, reason: error.message });
        throw new EnterpriseControlsError(
          EnterpriseControlsErrorCode.McpAddressRefused,
          `MCP server "${serverName}"'s sign-in is refused by the relay's address policy: ${error.message}.`,
          { serverName },
        );
      }
      throw oauthFailed(serverName, (error as Error).message);
    }
  }

  /** The named HTTP MCP server as stored (404 unknown, 409 a stdio one), and the organization's allowedIps. */
  private async httpServer(organizationId: string, serverName: string): Promise<{ server: HttpMcpServer; allowedIps: AllowedIps | null }> {
    const { settings } = await this.controls.inForce(organizationId);
    const sealed = (settings.mcpServers ?? []).find((candidate) => candidate.name === serverName);
    if (!sealed) throw mcpServerNotFound(serverName);
    if (sealed.transport !== 'http') {
      throw new EnterpriseControlsError(
        EnterpriseControlsErrorCode.McpTransportMismatch,
        `MCP server "${serverName}" is a stdio server: agents start it themselves, and there is nothing to sign in to.`,
        { serverName, transport: sealed.transport },
      );
    }
    return { server: sealed, allowedIps: AllowedIps.of(settings) };
  }

  private seal(organizationId: string, serverName: string, secrets: StoredOAuthSecrets): string {
    return this.box.encrypt(JSON.stringify(secrets), contextOf(organizationId, serverName));
  }

  private open(row: McpOAuthConnectionEntity): StoredOAuthSecrets {
    try {
      return JSON.parse(this.box.decrypt(row.secrets, contextOf(row.organizationId, row.serverName))) as StoredOAuthSecrets;
    } catch {
      throw new EnterpriseControlsError(
        EnterpriseControlsErrorCode.SecretUnreadable,
        `The OAuth sign-in of MCP server "${row.serverName}" cannot be decrypted with SECRETS_KEY; sign in again.`,
        { serverName: row.serverName },
      );
    }
  }
}

function viewOf(server: HttpMcpServer, row: McpOAuthConnectionEntity | null): McpOAuthView {
  const none = { serverName: server.name, url: server.url, scope: null, expiresAt: null, connectedAt: null, connectedBy: null, problem: null };
  if (!row || row.serverUrl !== server.url) return { ...none, status: 'not_connected' };
  const pending = row.stateHash !== null && row.pendingUntil !== null && row.pendingUntil.getTime() > Date.now();
  return {
    ...none,
    status: pending ? 'pending' : row.status === 'pending' ? 'not_connected' : row.status,
    scope: row.scope,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    connectedAt: row.connectedAt?.toISOString() ?? null,
    connectedBy: row.connectedAt ? row.connectedBy : null,
    problem: row.problem,
  };
}

function contextOf(organizationId: string, serverName: string): string {
  return `mcp-oauth:${organizationId}:${serverName}`;
}

function hashOf(state: string): string {
  return createHash('sha256').update(state).digest('hex');
}

function expiryOf(expiresIn: number | undefined, now: Date): Date | null {
  return typeof expiresIn === 'number' && Number.isFinite(expiresIn) ? new Date(now.getTime() + expiresIn * 1000) : null;
}

function endsSoon(expiresAt: Date | null): boolean {
  return expiresAt !== null && expiresAt.getTime() - REFRESH_AHEAD_MS <= Date.now();
}

/** A sign-in that could not be made or renewed with the server's authorization server. */
export function oauthFailed(serverName: string, reason: string): EnterpriseControlsError {
  return new EnterpriseControlsError(EnterpriseControlsErrorCode.McpOAuthFailed, `MCP server "${serverName}"'s OAuth sign-in failed: ${reason}.`, {
    serverName,
  });
}

export function oauthRequired(serverName: string, problem?: string): EnterpriseControlsError {
  return new EnterpriseControlsError(
    EnterpriseControlsErrorCode.McpOAuthRequired,
    `MCP server "${serverName}" needs an OAuth sign-in${problem ? ` (${problem.replace(/\.$/, '')})` : ''}: an Owner or Manager signs in once, ` +
      `from the console's controls page or with POST /api/v0/organization/enterprise-controls/mcp-servers/${serverName}/oauth.`,
    { serverName },
  );
}
