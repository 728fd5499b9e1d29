import { createHash, randomBytes } from 'node:crypto';

/** Recognisable by secret scanners and by the auth guard, which routes on it. */
export const API_KEY_PREFIX = 'apk_';
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;
const API_KEY_SHAPE = /^apk_[A-Za-z0-9_-]{43}$/;

/** A new key: 256 random bits. Only the hash is stored; the key is shown once. */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, DISPLAY_PREFIX_LENGTH), hash: hashApiKey(key) };
}

/** SHA-256 suffices: the key has 256 bits of entropy, so there is nothing to brute-force. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(API_KEY_PREFIX);
}

export function isWellFormedApiKey(token: string): boolean {
  return API_KEY_SHAPE.test(token);
}

/** A computer's agent token: the same strength as an API key, a prefix of its own. */
export const COMPUTER_TOKEN_PREFIX = 'cpt_';
const COMPUTER_TOKEN_SHAPE = /^cpt_[A-Za-z0-9_-]{43}$/;

/** A new agent token for a computer. Only the hash is stored; the token is shown once. */
export function generateComputerToken(): { token: string; prefix: string; hash: string } {
  const token = COMPUTER_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, prefix: token.slice(0, COMPUTER_TOKEN_PREFIX.length + 8), hash: hashApiKey(token) };
}

export function looksLikeComputerToken(token: string): boolean {
  return token.startsWith(COMPUTER_TOKEN_PREFIX);
}

export function isWellFormedComputerToken(token: string): boolean {
  return COMPUTER_TOKEN_SHAPE.test(token);
}

/**
 * A worker pool's enrollment token: a worker presents it once, to register into its pool. The same strength as an API
 * key, a prefix of its own, so the guard can tell it apart and a leaked one is recognisable.
 */
export const WORKER_ENROLLMENT_TOKEN_PREFIX = 'wkt_';
const WORKER_ENROLLMENT_TOKEN_SHAPE = /^wkt_[A-Za-z0-9_-]{43}$/;

export function generateWorkerEnrollmentToken(): { token: string; prefix: string; hash: string } {
  const token = WORKER_ENROLLMENT_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, prefix: token.slice(0, WORKER_ENROLLMENT_TOKEN_PREFIX.length + 8), hash: hashApiKey(token) };
}

export function isWellFormedWorkerEnrollmentToken(token: string): boolean {
  return WORKER_ENROLLMENT_TOKEN_SHAPE.test(token);
}

/** A registered worker's session token: returned once by registration, presented on each of its calls. */
export const WORKER_SESSION_TOKEN_PREFIX = 'wks_';
const WORKER_SESSION_TOKEN_SHAPE = /^wks_[A-Za-z0-9_-]{43}$/;

export function generateWorkerSessionToken(): { token: string; hash: string } {
  const token = WORKER_SESSION_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, hash: hashApiKey(token) };
}

export function isWellFormedWorkerSessionToken(token: string): boolean {
  return WORKER_SESSION_TOKEN_SHAPE.test(token);
}

/** Either of a worker's tokens: good on the worker channel only. */
export function looksLikeWorkerToken(token: string): boolean {
  return token.startsWith(WORKER_ENROLLMENT_TOKEN_PREFIX) || token.startsWith(WORKER_SESSION_TOKEN_PREFIX);
}
