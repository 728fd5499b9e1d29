import { codesOf, CodeOf, errorClassOf, ErrorKind, ErrorTable } from '../../../platform/http/domain-error';

const READINESS_ERRORS = {
  UnknownCursor: { code: 'unknown_start_after', kind: ErrorKind.InvalidRequest },
  RepositoryNotFound: { code: 'repository_not_found', kind: ErrorKind.NotFound },
} as const satisfies ErrorTable;

export const ReadinessErrorCode = codesOf(READINESS_ERRORS);
export type ReadinessErrorCode = CodeOf<typeof READINESS_ERRORS>;

export class ReadinessError extends errorClassOf(READINESS_ERRORS) {}

export function repositoryNotFound(repoId: string): ReadinessError {
  return new ReadinessError(ReadinessErrorCode.RepositoryNotFound, `Your organization has no report of repository ${repoId}.`, { repoId });
}
