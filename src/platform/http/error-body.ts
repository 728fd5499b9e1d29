import { STATUS_CODES } from 'node:http';

/** The spec's v0 error body (also used on the web application's endpoints). */
export interface V0ErrorBody {
  detail: string;
  status: number;
  title: string;
  metadata?: Record<string, unknown>;
}

/** The analytics error body; readiness answers it too, with the v0 body's `metadata` when there is any. */
export interface RequestIdErrorBody {
  title: string;
  detail: string;
  status: number;
  requestId: string;
  metadata?: Record<string, unknown>;
}

export type ErrorFlavour = 'v0' | 'analytics' | 'readiness';

/** Which error body a path answers with, per the spec's Errors section and the reference documents. */
export function errorFlavourOf(path: string): ErrorFlavour {
  if (path.startsWith('/api/v1/')) return 'analytics';
  if (path.startsWith('/api/organization/')) return 'readiness';
  return 'v0';
}

export function titleOf(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}

export function errorBody(
  flavour: ErrorFlavour,
  status: number,
  detail: string,
  requestId: string,
  metadata?: Record<string, unknown>,
): V0ErrorBody | RequestIdErrorBody {
  const title = titleOf(status);
  if (flavour === 'v0') {
    return metadata && Object.keys(metadata).length > 0 ? { detail, status, title, metadata } : { detail, status, title };
  }
  if (flavour === 'readiness' && metadata && Object.keys(metadata).length > 0) return { title, detail, status, requestId, metadata };
  return { title, detail, status, requestId };
}
