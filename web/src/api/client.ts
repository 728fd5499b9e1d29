import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './generated/api';

/** The API's schemas, generated from the server's OpenAPI document at build time (never committed). */
export type Schemas = components['schemas'];
export type Me = Schemas['MeView'];
export type Role = Me['user']['role'];

/**
 * An answer that was not a success, as the API words it: `title`, `detail`, its `metadata.code`, and the
 * `x-request-id` to quote when reporting it.
 */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly requestId: string | null,
    readonly code?: string,
    /** The body's `metadata` (`errors` of a 400: `{field, message}` per problem; `currentRevision` of a 412...). */
    readonly metadata: Record<string, unknown> = {},
  ) {
    super(detail);
    this.name = 'ApiProblem';
  }
}

let credential: string | null = null;

/** The API key every request carries; kept in memory here and in sessionStorage by the session (never in a URL). */
export function setCredential(key: string | null): void {
  credential = key;
}

/** The Authorization header for requests made without this client (the event stream, read with fetch). */
export function authorizationHeader(): Record<string, string> {
  return credential ? { Authorization: `Bearer ${credential}` } : {};
}

/** An error answer read from a raw Response (see unwrap). */
export async function problemFrom(response: Response): Promise<ApiProblem> {
  const body: unknown = await response.json().catch(() => null);
  return problemOf(response, body);
}

const bearer: Middleware = {
  onRequest({ request }) {
    if (credential) request.headers.set('Authorization', `Bearer ${credential}`);
    return request;
  },
};

/**
 * The console calls the server that served it: same origin, so the API's addresses need no configuration and the
 * Content-Security-Policy's `connect-src 'self'` covers them. `Accept: application/json` asks for the API on the
 * paths the API shares with the console (`/settings/api-keys`).
 */
export const api = createClient<paths>({ baseUrl: window.location.origin, headers: { Accept: 'application/json' } });
api.use(bearer);

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The body of a successful answer, or an ApiProblem carrying the API's own words. */
export async function unwrap<T>(call: Promise<Answer<T>>): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (response.ok && data !== undefined && data !== null) return data as NonNullable<T>;
  throw problemOf(response, error);
}

/** For an answer with no body (204): resolves when it succeeded, else throws the API's problem as `unwrap` does. */
export async function done(call: Promise<Answer<unknown>>): Promise<void> {
  const { error, response } = await call;
  if (!response.ok) throw problemOf(response, error);
}

function problemOf(response: Response, body: unknown): ApiProblem {
  const { title, detail, metadata } = (typeof body === 'object' && body !== null ? body : {}) as {
    title?: unknown;
    detail?: unknown;
    metadata?: { code?: unknown } & Record<string, unknown>;
  };
  return new ApiProblem(
    response.status,
    typeof title === 'string' ? title : response.statusText || `HTTP ${response.status}`,
    typeof detail === 'string' ? detail : `The server answered ${response.status} without an explanation.`,
    response.headers.get('x-request-id'),
    typeof metadata?.code === 'string' ? metadata.code : undefined,
    typeof metadata === 'object' && metadata !== null ? metadata : {},
  );
}
