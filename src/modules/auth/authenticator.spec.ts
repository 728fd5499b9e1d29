import { loadConfig } from '../../config/app-config';
import type { AuthRepository, CallerRow } from './auth.repository';
import { Authenticator } from './authenticator';
import { ComputerTokenLookup, type TokenComputer } from './contracts/computer-token-lookup';
import { CredentialCache } from './credential-cache';
import { generateApiKey, generateComputerToken } from './domain/api-key-secret';
import { AuthError, AuthErrorCode } from './domain/auth.errors';
import { Role } from './domain/role';
import { JwtVerifier } from './jwt-verifier';

const NOW = new Date('2026-11-26T12:00:00Z');
const USER = '01a20000-0000-7000-8000-0000000000aa';
const ORG = '01a20000-0000-7000-8000-000000000001';

/** The credentials a test database would hold, by hash: what the repository's queries would answer. */
class Credentials {
  readonly keys = new Map<string, CallerRow>();
  readonly tokens = new Map<string, TokenComputer>();
  /** Users who are members (not removed), by id. */
  readonly users = new Map<string, CallerRow>([[USER, caller({})]]);
  lookups = 0;
  tokenLookups = 0;
  userLookups = 0;

  addKey(row: Partial<CallerRow> = {}): string {
    const { key, hash } = generateApiKey();
    this.keys.set(hash, caller({ api_key_id: '01a20000-0000-7000-8000-0000000000cc', ...row }));
    return key;
  }

  repository(): AuthRepository {
    return {
      findApiKeyByHash: async (hash: string) => {
        this.lookups += 1;
        return this.keys.get(hash) ?? null;
      },
      touchApiKey: async () => true,
      findCaller: async (userId: string, organizationId: string) => {
        this.userLookups += 1;
        const user = this.users.get(userId);
        return user?.organization_id === organizationId ? user : null;
      },
    } as unknown as AuthRepository;
  }

  computerTokens(): ComputerTokenLookup {
    return {
      byHash: async (hash: string) => {
        this.tokenLookups += 1;
        return this.tokens.get(hash) ?? null;
      },
    };
  }

  addComputer(computerId = '01a20000-0000-7000-8000-0000000000dd'): { token: string; hash: string } {
    const generated = generateComputerToken();
    this.tokens.set(generated.hash, { computerId, organizationId: ORG, ownerId: USER });
    return generated;
  }
}

function caller(row: Partial<CallerRow>): CallerRow {
  return {
    api_key_id: null,
    revoked_at: null,
    expires_at: null,
    last_used_at: null,
    user_id: USER,
    organization_id: ORG,
    role: Role.Member,
    email: 'member@example.test',
    name: 'Member',
    features: {},
    ...row,
  };
}

describe('Authenticator', () => {
  let credentials: Credentials;
  let authenticator: Authenticator;
  let cache: CredentialCache;

  beforeEach(() => {
    credentials = new Credentials();
    const config = loadConfig({ AUTH_CACHE_MS: '60000' });
    cache = new CredentialCache(config);
    authenticator = new Authenticator(credentials.repository(), new JwtVerifier(config), cache, credentials.computerTokens());
  });

  const failure = (header: string | undefined) =>
    authenticator.authenticate(header, NOW).then(
      () => {
        throw new Error('authenticated');
      },
      (error: unknown) => (error as AuthError).code,
    );

  it('reads a Bearer API key into the principal of its user, with the key named', async () => {
    const key = credentials.addKey({ role: Role.Manager });
    await expect(authenticator.authenticate(`Bearer ${key}`, NOW)).resolves.toMatchObject({
      userId: USER,
      organizationId: ORG,
      role: Role.Manager,
      credential: { kind: 'api_key', apiKeyId: '01a20000-0000-7000-8000-0000000000cc' },
    });
    await expect(authenticator.authenticate(`bearer   ${key}  `, NOW)).resolves.toMatchObject({ userId: USER });
  });

  it.each([
    [undefined, AuthErrorCode.MissingCredentials],
    ['', AuthErrorCode.MissingCredentials],
    ['Basic dXNlcjpwYXNz', AuthErrorCode.MalformedCredentials],
    ['Bearer', AuthErrorCode.MalformedCredentials],
    ['Bearer two tokens', AuthErrorCode.MalformedCredentials],
    ['Bearer not-a-token', AuthErrorCode.MalformedCredentials],
  ])('refuses the header %p with %s', async (header, code) => {
    expect(await failure(header)).toBe(code);
  });

  it('refuses a malformed or unknown key without telling which, and looks up only well-formed ones', async () => {
    credentials.addKey();
    expect(await failure('Bearer apk_short')).toBe(AuthErrorCode.InvalidCredentials);
    expect(credentials.lookups).toBe(0);
    expect(await failure(`Bearer ${generateApiKey().key}`)).toBe(AuthErrorCode.InvalidCredentials);
    expect(credentials.lookups).toBe(1);
  });

  it("refuses a revoked key, an expired key (at its expiry), and a removed user's key", async () => {
    expect(await failure(`Bearer ${credentials.addKey({ revoked_at: new Date(NOW.getTime() - 1) })}`)).toBe(AuthErrorCode.RevokedApiKey);
    expect(await failure(`Bearer ${credentials.addKey({ expires_at: NOW })}`)).toBe(AuthErrorCode.ExpiredCredentials);
    expect(await failure(`Bearer ${credentials.addKey({ user_removed_at: new Date(NOW.getTime() - 1) })}`)).toBe(AuthErrorCode.InvalidCredentials);
    await expect(authenticator.authenticate(`Bearer ${credentials.addKey({ expires_at: new Date(NOW.getTime() + 1) })}`, NOW)).resolves.toBeDefined();
  });

  it('knows a cached key used within the minute without I/O, refuses it from the cache, and leaves the rest to authenticate', async () => {
    const thrown = (known: () => unknown) => {
      try {
        return known();
      } catch (error) {
        return (error as AuthError).code;
      }
    };
    const at = (ms: number) => new Date(NOW.getTime() + ms);
    const key = credentials.addKey({ expires_at: at(1000) });
    expect(authenticator.known(`Bearer ${key}`, NOW)).toBeUndefined();
    await authenticator.authenticate(`Bearer ${key}`, NOW);
    expect(authenticator.known(`Bearer ${key}`, at(500))).toMatchObject({ userId: USER, credential: { kind: 'api_key' } });
    expect(credentials.lookups).toBe(1);
    expect(thrown(() => authenticator.known(`Bearer ${key}`, at(1000)))).toBe(AuthErrorCode.ExpiredCredentials);
    // Its use is due a record a minute on: authenticate makes it.
    const recorded = credentials.addKey();
    await authenticator.authenticate(`Bearer ${recorded}`, NOW);
    expect(authenticator.known(`Bearer ${recorded}`, at(60_000))).toBeUndefined();
    expect(thrown(() => authenticator.known('Basic dXNlcjpwYXNz'))).toBe(AuthErrorCode.MalformedCredentials);
    expect(authenticator.known(`Bearer ${generateApiKey().key}`)).toBeUndefined();
    expect(credentials.lookups).toBe(2);
  });

  it('checks expiry on every request, even from the cache', async () => {
    const key = credentials.addKey({ expires_at: new Date(NOW.getTime() + 1000) });
    await authenticator.authenticate(`Bearer ${key}`, NOW);
    await authenticator.authenticate(`Bearer ${key}`, NOW);
    const later = await authenticator.authenticate(`Bearer ${key}`, new Date(NOW.getTime() + 1000)).catch((error: AuthError) => error.code);
    expect(later).toBe(AuthErrorCode.ExpiredCredentials);
    expect(credentials.lookups).toBe(1);
  });

  it("reads a computer token as the computer (its owner's rights), and forgets a rotated one at once", async () => {
    credentials.users.set(USER, caller({ role: Role.Manager }));
    const { token, hash } = credentials.addComputer();
    await expect(authenticator.authenticate(`Bearer ${token}`, NOW)).resolves.toMatchObject({
      userId: USER,
      organizationId: ORG,
      role: Role.Manager,
      credential: { kind: 'computer', computerId: '01a20000-0000-7000-8000-0000000000dd' },
    });
    credentials.tokens.delete(hash);
    authenticator.forgetComputerToken(hash);
    expect(await failure(`Bearer ${token}`)).toBe(AuthErrorCode.InvalidCredentials);
  });

  it('refuses the token of a computer whose owner was removed from the organization', async () => {
    const { token } = credentials.addComputer();
    credentials.users.delete(USER);
    expect(await failure(`Bearer ${token}`)).toBe(AuthErrorCode.InvalidCredentials);
  });

  it("reads an owner once for all their computers' tokens, and forgets the owner with the member (a role change applies at once)", async () => {
    const first = credentials.addComputer('01a20000-0000-7000-8000-0000000000d1');
    const second = credentials.addComputer('01a20000-0000-7000-8000-0000000000d2');
    await authenticator.authenticate(`Bearer ${first.token}`, NOW);
    await authenticator.authenticate(`Bearer ${second.token}`, NOW);
    await authenticator.authenticate(`Bearer ${second.token}`, NOW);
    expect({ computers: credentials.tokenLookups, users: credentials.userLookups }).toEqual({ computers: 2, users: 1 });

    credentials.users.set(USER, caller({ role: Role.Guest }));
    cache.forget(CredentialCache.userKey(USER, ORG));
    await expect(authenticator.authenticate(`Bearer ${first.token}`, NOW)).resolves.toMatchObject({ role: Role.Guest });
    expect(credentials.tokenLookups).toBe(2);
  });

  it("does not take an API key's random part under the computer-token prefix, or the reverse", async () => {
    const key = credentials.addKey();
    expect(await failure(`Bearer cpt_${key.slice(4)}`)).toBe(AuthErrorCode.InvalidCredentials);
    const { token } = credentials.addComputer();
    expect(await failure(`Bearer apk_${token.slice(4)}`)).toBe(AuthErrorCode.InvalidCredentials);
  });

  it('refuses a JWT when the server has no JWT_SECRET or JWT_JWKS_URL', async () => {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    expect(await failure(`Bearer ${part({ alg: 'HS256' })}.${part({ sub: USER })}.c2ln`)).toBe(AuthErrorCode.JwtNotConfigured);
  });
});
