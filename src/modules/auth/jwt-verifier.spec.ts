import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, JWK, SignJWT } from 'jose';
import { loadConfig } from '../../config/app-config';
import { AuthError, AuthErrorCode } from './domain/auth.errors';
import { JWT_CLOCK_SKEW_SECONDS, JwtVerifier } from './jwt-verifier';

const SECRET = 'a-test-secret-of-at-least-thirty-two-characters';
const USER = '01a20000-0000-7000-8000-0000000000aa';
const ORG = '01a20000-0000-7000-8000-000000000001';
const now = () => Math.floor(Date.now() / 1000);

/** A token as an identity provider would sign it; `claims` override the defaults (null removes one). */
async function hs256(claims: Record<string, unknown> = {}, secret = SECRET, alg = 'HS256'): Promise<string> {
  const payload: Record<string, unknown> = { sub: USER, org_id: ORG, iat: now(), exp: now() + 600, ...claims };
  for (const [name, value] of Object.entries(payload)) if (value === null) delete payload[name];
  return new SignJWT(payload).setProtectedHeader({ alg }).sign(new TextEncoder().encode(secret));
}

async function rejection(verifier: JwtVerifier, token: string): Promise<AuthError> {
  const error = await verifier.verify(token).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AuthError);
  return error as AuthError;
}

describe('JwtVerifier with JWT_SECRET (HS256)', () => {
  const verifier = new JwtVerifier(loadConfig({ JWT_SECRET: SECRET, JWT_MAX_AGE_SECONDS: '3600' }));

  it('answers the user and organization of a good token', async () => {
    await expect(verifier.verify(await hs256())).resolves.toEqual({ userId: USER, organizationId: ORG });
  });

  it.each([
    ['signed with another secret', () => hs256({}, `${SECRET}-not`), AuthErrorCode.InvalidCredentials],
    ['expired', () => hs256({ iat: now() - 120, exp: now() - 60 }), AuthErrorCode.ExpiredCredentials],
    ['without exp', () => hs256({ exp: null }), AuthErrorCode.InvalidCredentials],
    ['without iat', () => hs256({ iat: null }), AuthErrorCode.InvalidCredentials],
    ['without org_id', () => hs256({ org_id: null }), AuthErrorCode.InvalidCredentials],
    ['without sub', () => hs256({ sub: null }), AuthErrorCode.InvalidCredentials],
    ['with a numeric org_id', () => hs256({ org_id: 42 }), AuthErrorCode.InvalidCredentials],
    ['issued further ahead than the clock skew', () => hs256({ iat: now() + JWT_CLOCK_SKEW_SECONDS + 30, exp: now() + 900 }), AuthErrorCode.InvalidCredentials],
    ['issued longer ago than JWT_MAX_AGE_SECONDS', () => hs256({ iat: now() - 3700, exp: now() + 60 }), AuthErrorCode.ExpiredCredentials],
    ['living longer than JWT_MAX_AGE_SECONDS', () => hs256({ exp: now() + 3700 }), AuthErrorCode.InvalidCredentials],
    ['signed HS512 (only HS256 is taken with a secret)', () => hs256({}, SECRET, 'HS512'), AuthErrorCode.JwtNotConfigured],
  ])('refuses a token %s', async (_, make, code) => {
    expect((await rejection(verifier, await make())).code).toBe(code);
  });

  it('takes a token issued within the clock skew', async () => {
    await expect(verifier.verify(await hs256({ iat: now() + JWT_CLOCK_SKEW_SECONDS - 10 }))).resolves.toEqual({ userId: USER, organizationId: ORG });
  });

  it('refuses alg "none" (an unsigned token that claims anything)', async () => {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub: USER, org_id: ORG, iat: now(), exp: now() + 60 })}.`;
    expect(JwtVerifier.looksLikeJwt(unsigned)).toBe(true);
    expect((await rejection(verifier, unsigned)).code).toBe(AuthErrorCode.JwtNotConfigured);
  });

  it('refuses a token whose payload was changed after signing', async () => {
    const [header, , signature] = (await hs256()).split('.');
    const forged = Buffer.from(JSON.stringify({ sub: USER, org_id: '01a20000-0000-7000-8000-000000000002', iat: now(), exp: now() + 60 })).toString(
      'base64url',
    );
    expect((await rejection(verifier, `${header}.${forged}.${signature}`)).code).toBe(AuthErrorCode.InvalidCredentials);
  });

  it('refuses garbage that looks like a JWT', async () => {
    expect((await rejection(verifier, 'abc.def.ghi')).code).toBe(AuthErrorCode.MalformedCredentials);
  });

  it('checks iss and aud when they are configured', async () => {
    const strict = new JwtVerifier(loadConfig({ JWT_SECRET: SECRET, JWT_ISSUER: 'https://idp.example.test', JWT_AUDIENCE: 'agent-platform' }));
    await expect(strict.verify(await hs256({ iss: 'https://idp.example.test', aud: 'agent-platform' }))).resolves.toEqual({
      userId: USER,
      organizationId: ORG,
    });
    expect((await rejection(strict, await hs256({ iss: 'https://evil.example.test', aud: 'agent-platform' }))).code).toBe(AuthErrorCode.InvalidCredentials);
    expect((await rejection(strict, await hs256({ iss: 'https://idp.example.test', aud: 'another-app' }))).code).toBe(AuthErrorCode.InvalidCredentials);
    expect((await rejection(strict, await hs256())).code).toBe(AuthErrorCode.InvalidCredentials);
  });
});

describe('JwtVerifier with JWT_JWKS_URL (a real key set served over HTTP)', () => {
  let server: Server;
  let verifier: JwtVerifier;
  let privateKey: CryptoKey;
  let publicJwk: JWK;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey as CryptoKey;
    publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    server = createServer((_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [publicJwk] })));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    verifier = new JwtVerifier(loadConfig({ JWT_JWKS_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json` }));
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const es256 = (key: CryptoKey, kid = 'k1') =>
    new SignJWT({ sub: USER, org_id: ORG }).setProtectedHeader({ alg: 'ES256', kid }).setIssuedAt().setExpirationTime('10m').sign(key);

  it('verifies a token signed by a key of the set', async () => {
    await expect(verifier.verify(await es256(privateKey))).resolves.toEqual({ userId: USER, organizationId: ORG });
  });

  it('refuses a token signed by another key under the same kid', async () => {
    const stranger = await generateKeyPair('ES256');
    expect((await rejection(verifier, await es256(stranger.privateKey as CryptoKey))).code).toBe(AuthErrorCode.InvalidCredentials);
  });

  it('refuses HS256 signed with the public key as the secret (algorithm confusion), and HS256 at all without JWT_SECRET', async () => {
    const confused = await new SignJWT({ sub: USER, org_id: ORG })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    expect((await rejection(verifier, confused)).code).toBe(AuthErrorCode.JwtNotConfigured);
  });
});
