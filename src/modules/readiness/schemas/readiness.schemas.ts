import { closedObject, NO_CONTROL_CHARACTERS, ref, SchemaObject, SchemaRegistry } from '../../../platform/http/json-schema';
import { CRITERION_ID_PATTERN, LEVEL_NAMES } from '../domain/criteria';
import { REASONING_EFFORTS, REPORT_LIMITS } from '../domain/report';
import { REPOSITORY_URL_FORMAT } from '../domain/repository-id';
import { READINESS_QUERIES } from './readiness-queries';

const closed = closedObject;
const L = REPORT_LIMITS;
const line = (max: number, description?: string): SchemaObject => ({
  type: 'string',
  minLength: 1,
  maxLength: max,
  pattern: NO_CONTROL_CHARACTERS,
  ...(description ? { description } : {}),
});

const reportFields = (forUpload: boolean): Record<string, SchemaObject> => ({
  repoUrl: forUpload
    ? {
        ...line(
          L.repoUrl,
          'The repository evaluated: an http(s), ssh, git or file URL, or an scp-like address (`git@host:org/repo.git`, stored as its ssh:// URL), ' +
            `at most ${L.repoUrl} characters. Stored normalized (WHATWG URL form: \`HTTPS://GitHub.com:443/a/b\` is stored as \`https://github.com/a/b\`), ` +
            'without credentials (`user:password@` of an http(s) URL, a password of any: dropped). Refused: whitespace or control characters anywhere, ' +
            'any of `<>"\'{}|\\^`` unencoded, `scheme:` without `//`, no host (but `file:`), no path. The canonical form gives the repository id.',
        ),
        format: 'repository-url',
      }
    : { type: 'string', format: 'uri', description: 'The repository evaluated, as stored (normalized).' },
  apps: {
    type: 'object',
    maxProperties: L.apps,
    propertyNames: { minLength: 1, maxLength: L.appPath, pattern: NO_CONTROL_CHARACTERS },
    additionalProperties: closed(['description'], { description: { type: 'string', maxLength: L.description } }),
    description: `Application path (\`.\` for the root) → \`{description}\`; at most ${L.apps}.`,
  },
  report: {
    type: 'object',
    ...(forUpload ? { minProperties: 1 } : {}),
    maxProperties: L.criteria,
    propertyNames: { pattern: CRITERION_ID_PATTERN },
    additionalProperties: ref('CriterionEvaluation'),
    description: `Criterion id (snake_case, at most 64 characters) → evaluation; at most ${L.criteria}. The criteria this server knows are listed in \`/docs\`; other well-formed ids are kept and do not count towards levels.`,
  },
  commitHash: { type: 'string', pattern: '^([0-9a-f]{40}|[0-9a-f]{64})$', description: 'Full commit id (40 or 64 lower-case hexadecimal digits).' },
  branch: line(255),
  hasLocalChanges: { type: 'boolean' },
  hasNonRemoteCommits: { type: 'boolean' },
  modelUsed: closed(['id', 'reasoningEffort'], { id: line(256), reasoningEffort: { type: 'string', enum: [...REASONING_EFFORTS] } }),
  agentVersion: line(64, 'Version of the evaluator that produced the report.'),
});

/** The Readiness module's JSON Schemas: the spec's report (closed) and the upload body. */
export const readinessSchemas = new SchemaRegistry('readiness', { 'repository-url': REPOSITORY_URL_FORMAT }).add({
  ...READINESS_QUERIES,
  CriterionEvaluation: closed(['numerator', 'denominator', 'rationale'], {
    numerator: { type: 'number', minimum: 0, description: 'Places that pass; at most `denominator`.' },
    denominator: {
      type: 'number',
      minimum: 1,
      description: 'Places the criterion applies to (1 for a repository criterion, the applications for an application criterion).',
    },
    rationale: { type: 'string', maxLength: L.rationale, description: 'The evidence: files found or missing.' },
  }),
  ReadinessReport: closed(['reportId', 'createdAt', 'repoUrl', 'apps', 'report'], {
    reportId: { type: 'string', format: 'uuid' },
    createdAt: { type: 'integer', description: 'Unix ms, when the server received the report.' },
    ...reportFields(false),
  }),
  UploadReadinessReportBody: closed(['repoUrl', 'apps', 'report'], reportFields(true), 'A report to store; the server assigns `reportId` and `createdAt`.'),
  ReadinessRepository: closed(['repoId', 'repoUrl', 'reports', 'latestReportId', 'latestCreatedAt', 'level'], {
    repoId: { type: 'string', description: '`repo_` and 20 hexadecimal digits: the same for every spelling of the repository URL.' },
    repoUrl: { type: 'string', description: 'The URL of its latest report.' },
    reports: { type: 'integer', minimum: 1 },
    latestReportId: { type: 'string', format: 'uuid' },
    latestCreatedAt: { type: 'integer', description: 'Unix ms.' },
    level: { type: 'integer', minimum: 1, maximum: 5, description: 'The maturity level of its latest report.' },
  }),
  ReadinessCriteria: closed(
    ['levels', 'unlockShare', 'pillars', 'criteria'],
    {
      levels: {
        type: 'array',
        items: closed(['level', 'name'], { level: { type: 'integer', minimum: 1, maximum: 5 }, name: { type: 'string', enum: [...LEVEL_NAMES] } }),
      },
      unlockShare: { type: 'number', description: "A repository unlocks level N+1 when it passes at least this share of level N's criteria." },
      pillars: {
        type: 'array',
        items: closed(['id', 'name'], { id: { type: 'string' }, name: { type: 'string' } }),
        description: 'The nine pillars, in the order to show them.',
      },
      criteria: {
        type: 'array',
        items: closed(['id', 'title', 'pillar', 'level', 'scope'], {
          id: { type: 'string', description: "The key of the criterion in a report's `report`." },
          title: { type: 'string', description: 'What it checks.' },
          pillar: { type: 'string', description: "A pillar's `id`." },
          level: { type: 'integer', minimum: 1, maximum: 5, description: 'The level whose unlocking it counts towards.' },
          scope: {
            type: 'string',
            enum: ['repository', 'application'],
            description: 'Evaluated once for the repository, or for each application (`numerator` of `denominator` pass).',
          },
        }),
      },
    },
    'The criteria levels are computed from. A report may carry other ids: they are kept and do not count.',
  ),
  ReadinessLevelHistory: closed(['repoId', 'levels'], {
    repoId: { type: 'string' },
    levels: {
      type: 'array',
      items: closed(['reportId', 'createdAt', 'level'], {
        reportId: { type: 'string', format: 'uuid' },
        createdAt: { type: 'integer', description: 'Unix ms, when the server received the report.' },
        level: { type: 'integer', minimum: 1, maximum: 5, description: 'The maturity level the report gave.' },
      }),
      description: 'The newest reports, oldest first.',
    },
  }),
  OrganizationReadiness: closed(['level', 'levelName', 'repositories'], {
    level: {
      type: 'integer',
      minimum: 1,
      maximum: 5,
      nullable: true,
      description: "The floor of the mean of the repositories' latest levels; null without any report.",
    },
    levelName: { type: 'string', enum: [...LEVEL_NAMES, null], nullable: true },
    repositories: { type: 'integer', minimum: 0, description: 'Repositories with at least one report.' },
  }),
});
