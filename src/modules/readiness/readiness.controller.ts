import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authenticated, CurrentPrincipal, Principal, Role } from '../auth';
import { QuerySchema, ref } from '../../platform/http/json-schema';
import { ApiErrorExamples, READINESS_ERROR } from '../../platform/http/openapi';
import { CRITERIA, LEVEL_NAMES, PILLARS, UNLOCK_SHARE } from './domain/criteria';
import { criteriaCatalogue, CriteriaCatalogueView, LevelPointView, RepositoryView, ReadinessReportView } from './domain/views';
import { LevelHistoryQuery, ListReportsQuery } from './schemas/readiness-queries';
import { ReadinessService, UploadReportInput } from './readiness.service';
import { readinessSchemas } from './schemas/readiness.schemas';
import { PathIds } from '../../platform/http/path-ids';
import { repositoryNotFound } from './domain/readiness.errors';

const UPLOADERS = [Role.Owner, Role.Manager, Role.Member];
const LIST = {
  summary: 'List readiness reports',
  description:
    "The organization's reports, newest first (by `createdAt`, then `reportId`). Page by passing the last report's `reportId` as `startAfter`. " +
    'Every role may read.',
};
const UPLOAD = {
  summary: 'Upload a readiness report',
  description:
    'Not in the spec; added. Stores a report (e.g. from `npm run cli -- readiness evaluate <path> --upload`); the server assigns `reportId` and `createdAt` and ' +
    'computes the repository id from `repoUrl`. `numerator` must not exceed `denominator` (at least 1). Owners, managers and members; guests get 403.',
};
/** The criteria and the level rule, written from the catalogue itself so the docs cannot drift from it. */
const CRITERIA_DOC =
  `Levels: ${LEVEL_NAMES.map((name, i) => `${i + 1} ${name}`).join(', ')}. Every repository starts at level 1 and unlocks level N+1 when it passes at least ` +
  `${UNLOCK_SHARE * 100}% of level N's criteria; a criterion passes when \`numerator\` equals \`denominator\` (every application passes); a criterion ` +
  "missing from a report fails. The organization's level is the floor of the mean of its repositories' latest levels.\n\n" +
  '| id | level | scope | pillar | checks |\n|---|---|---|---|---|\n' +
  CRITERIA.map((c) => `| \`${c.id}\` | ${c.level} | ${c.scope} | ${PILLARS[c.pillar]} | ${c.title} |`).join('\n');

const reportsSchema = { type: 'object', required: ['reports'], properties: { reports: { type: 'array', items: ref('ReadinessReport') } } };

/** Readiness reports, on `{app_url}` and without a version prefix (spec, Versioning 4), at both of the reference's paths. */
@ApiTags('Readiness reports')
@Controller('api/organization')
@Authenticated()
@ApiBadRequestResponse({ description: 'Invalid parameters or body; `detail` names the field.', schema: READINESS_ERROR })
@PathIds({ repoId: repositoryNotFound })
@ApiErrorExamples(repositoryNotFound('repo_3f9a1c0d5e7b2a4c6d8e'))
export class ReadinessController {
  constructor(private readonly readiness: ReadinessService) {}

  @Get(['maturity-level-reports', 'agent-readiness-reports'])
  @ApiOperation(LIST)
  @ApiOkResponse({ schema: reportsSchema })
  async list(
    @CurrentPrincipal() principal: Principal,
    @QuerySchema(readinessSchemas, 'ListReportsQuery') query: ListReportsQuery,
  ): Promise<{ reports: ReadinessReportView[] }> {
    const reports = await this.readiness.list(principal, {
      repoId: query.repoId,
      limit: query.limit === undefined ? undefined : Number(query.limit),
      startAfter: query.startAfter,
    });
    return { reports };
  }

  @Post(['maturity-level-reports', 'agent-readiness-reports'])
  @Authenticated(...UPLOADERS)
  @ApiOperation(UPLOAD)
  @ApiBody({ schema: ref('UploadReadinessReportBody') })
  @ApiCreatedResponse({ schema: ref('ReadinessReport') })
  upload(
    @CurrentPrincipal() principal: Principal,
    @Body(readinessSchemas.pipe('UploadReadinessReportBody')) body: UploadReportInput,
  ): Promise<ReadinessReportView> {
    return this.readiness.upload(principal, body);
  }

  @Get('readiness-repositories')
  @ApiOperation({
    summary: "List the organization's repositories",
    description:
      'Not in the spec; added. Every repository with a report, newest report first, with its `repoId` (for `?repoId=`) and the level of its latest report. ' +
      'A repository id is `repo_` and 20 hexadecimal digits of the SHA-256 of the normalized URL: host in lower case without credentials or port, path without `.git` or trailing slash, ' +
      'so `https://host/a/b.git`, `https://host/a/b` and `git@host:a/b.git` are one repository.',
  })
  @ApiOkResponse({ schema: { type: 'object', required: ['repositories'], properties: { repositories: { type: 'array', items: ref('ReadinessRepository') } } } })
  async repositories(@CurrentPrincipal() principal: Principal): Promise<{ repositories: RepositoryView[] }> {
    return { repositories: await this.readiness.repositories(principal) };
  }

  @Get('readiness-repositories/:repoId/levels')
  @ApiOperation({
    summary: "A repository's level over time",
    description:
      "Not in the spec; added (the web console draws it). The level each of the repository's newest reports gave, oldest first: `limit` of them (default 100, at most 500). " +
      "Every role may read. A repository the organization has no report of (another organization's included) is 404 `repository_not_found`.",
  })
  @ApiOkResponse({ schema: ref('ReadinessLevelHistory') })
  @ApiNotFoundResponse({ description: '`repository_not_found`.', schema: READINESS_ERROR })
  levels(
    @CurrentPrincipal() principal: Principal,
    @Param('repoId') repoId: string,
    @QuerySchema(readinessSchemas, 'LevelHistoryQuery') query: LevelHistoryQuery,
  ): Promise<{ repoId: string; levels: LevelPointView[] }> {
    return this.readiness.levelHistory(principal, repoId, query.limit === undefined ? undefined : Number(query.limit));
  }

  @Get('readiness-criteria')
  @ApiOperation({
    summary: 'The readiness criteria',
    description:
      'Not in the spec; added (the web console groups a report by pillar with it). Every criterion levels are computed from, with its pillar, level and scope; the level names; the unlock share. Every role may read.',
  })
  @ApiOkResponse({ schema: ref('ReadinessCriteria') })
  criteria(): CriteriaCatalogueView {
    return criteriaCatalogue();
  }

  @Get('maturity-level')
  @ApiOperation({
    summary: "Read the organization's maturity level",
    description: `Not in the spec; added. The floor of the mean of its repositories' latest levels; null before any report.\n\n${CRITERIA_DOC}`,
  })
  @ApiOkResponse({ schema: ref('OrganizationReadiness') })
  level(@CurrentPrincipal() principal: Principal): Promise<{ level: number | null; levelName: string | null; repositories: number }> {
    return this.readiness.organizationLevel(principal);
  }
}
