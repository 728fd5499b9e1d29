import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

/** What a connection keeps encrypted: the client registration (a secret may be in it), the tokens, and a sign-in's PKCE verifier. */
export interface StoredOAuthSecrets {
  clientInformation?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  codeVerifier?: string;
  /** The admin whose sign-in is under way. */
  startedBy?: string;
}

/** A refresh that could only go on with a person signing in again. */
export class SignInNeeded extends Error {}

/**
 * The MCP SDK's OAuth client state for one connection, held in memory while the SDK's `auth()` runs and
 * written back by the caller: the SDK does discovery, registration, PKCE, the code exchange and refreshes.
 * Interactive (with a `state`) when an admin starts a sign-in; otherwise a refresh, which must never turn
 * into a new sign-in.
 */
export class StoredOAuthClient implements OAuthClientProvider {
  /** Where the admin's browser goes to sign in, once `auth()` answers REDIRECT. */
  authorizationUrl: URL | undefined;

  constructor(
    readonly secrets: StoredOAuthSecrets,
    public discovery: OAuthDiscoveryState | undefined,
    private readonly options: { redirectUrl: string; scope?: string; state?: string },
  ) {}

  get redirectUrl(): string {
    return this.options.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Agent Platform',
      redirect_uris: [this.options.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.options.scope ? { scope: this.options.scope } : {}),
    };
  }

  state(): string {
    if (this.options.state === undefined) throw new SignInNeeded('a new sign-in is needed');
    return this.options.state;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.secrets.clientInformation;
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.secrets.clientInformation = information;
  }

  tokens(): OAuthTokens | undefined {
    return this.secrets.tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    // A refresh answer may leave out the refresh token: the one held stays good.
    const refresh = tokens.refresh_token ?? this.secrets.tokens?.refresh_token;
    this.secrets.tokens = { ...tokens, ...(refresh ? { refresh_token: refresh } : {}) };
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    if (this.options.state === undefined) throw new SignInNeeded('a new sign-in is needed');
    this.authorizationUrl = authorizationUrl;
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.secrets.codeVerifier = codeVerifier;
  }

  codeVerifier(): string {
    if (!this.secrets.codeVerifier) throw new SignInNeeded('no sign-in is under way');
    return this.secrets.codeVerifier;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }
}
