import type { ApiSchema } from '../../../platform/http/api-schema';
import { closedObject, SchemaObject } from '../../../platform/http/json-schema';
import { DEFAULT_HISTORY, DEFAULT_PAGE, MAX_HISTORY, MAX_PAGE } from '../domain/report';

/** Any positive integer, written as a string: the spec's `limit` of the readiness lists. */
const positiveInteger = (description: string): SchemaObject => ({
  type: 'string',
  pattern: '^[1-9][0-9]{0,99}$',
  'x-problem': 'must be a positive integer',
  description,
});

/** The query strings of the readiness list (the spec's) and of a repository's level history. */
export const READINESS_QUERIES: Record<string, SchemaObject> = {
  ListReportsQuery: closedObject([], {
    repoId: {
      type: 'string',
      maxLength: 256,
      description: "Only this repository's reports (a `repoId` from `GET /api/organization/readiness-repositories`). An unknown id lists nothing.",
    },
    limit: positiveInteger(
      `Reports per page: any positive integer (0, negative or not a whole number is 400). Default ${DEFAULT_PAGE}; pages hold at most ${MAX_PAGE}, so a larger limit answers ${MAX_PAGE}.`,
    ),
    startAfter: {
      type: 'string',
      maxLength: 64,
      description: "The `reportId` of the last report of the previous page. Unknown, another organization's or malformed: 400.",
    },
  }),
  LevelHistoryQuery: closedObject([], {
    limit: positiveInteger(
      `The newest reports to answer: any positive integer (0, negative or not a whole number is 400). Default ${DEFAULT_HISTORY}; at most ${MAX_HISTORY} are answered.`,
    ),
  }),
};

export type ListReportsQuery = ApiSchema<'ListReportsQuery'>;
export type LevelHistoryQuery = ApiSchema<'LevelHistoryQuery'>;
