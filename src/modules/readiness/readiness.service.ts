import type { ApiSchema } from '../../platform/http/api-schema';
import { Injectable } from '@nestjs/common';
import { EventLog } from '../../platform/events';
import { newId, isUuid } from '../../platform/database/ids';
import { FieldError, validationError } from '../../platform/http/validation';
import { eventActorOf, Principal } from '../auth';
import { LEVEL_NAMES, maturityLevel, organizationLevel } from './domain/criteria';
import { DEFAULT_HISTORY, DEFAULT_PAGE, MAX_HISTORY, MAX_PAGE } from './domain/report';
import { ReadinessError, ReadinessErrorCode, repositoryNotFound } from './domain/readiness.errors';
import { checkRepoUrl, repositoryId } from './domain/repository-id';
import { LevelPointView, ReadinessReportView, RepositoryView, toReportView } from './domain/views';
import { ReadinessReportEntity } from './entities';
import { ReadinessRepository } from './readiness.repository';

/** A report as uploaded: the spec's fields but the two the server assigns. */
export type UploadReportInput = ApiSchema<'UploadReadinessReportBody'>;

/** Readiness reports: stored as uploaded, listed newest first, rolled up into levels. */
@Injectable()
export class ReadinessService {
  constructor(
    private readonly repository: ReadinessRepository,
    private readonly events: EventLog,
  ) {}

  /** `receivedAt` is for seeding history (the demo); the API always stores the time of receipt. */
  async upload(principal: Principal, input: UploadReportInput, receivedAt = new Date()): Promise<ReadinessReportView> {
    const checked = checkRepoUrl(input.repoUrl);
    const problems: FieldError[] = [];
    if (!checked.ok) problems.push({ field: 'repoUrl', message: checked.message });
    const repoUrl = checked.ok ? checked.href : undefined;
    for (const [id, evaluation] of Object.entries(input.report)) {
      if (evaluation.numerator > evaluation.denominator) problems.push({ field: `report.${id}.numerator`, message: 'must not exceed denominator' });
    }
    if (problems.length > 0) throw validationError(problems);
    const row = Object.assign(new ReadinessReportEntity(), {
      id: newId(),
      organizationId: principal.organizationId,
      repoId: repositoryId(repoUrl!),
      repoUrl: repoUrl!,
      createdAt: receivedAt,
      apps: input.apps,
      report: input.report,
      commitHash: input.commitHash ?? null,
      branch: input.branch ?? null,
      hasLocalChanges: input.hasLocalChanges ?? null,
      hasNonRemoteCommits: input.hasNonRemoteCommits ?? null,
      modelUsed: input.modelUsed ?? null,
      agentVersion: input.agentVersion ?? null,
      level: maturityLevel(input.report),
      uploadedBy: principal.userId,
    });
    await this.repository.transaction(async (manager) => {
      await this.repository.insert(manager, row);
      this.events.raise(manager, {
        type: 'readiness.report_created',
        organizationId: row.organizationId,
        actor: eventActorOf(principal),
        occurredAt: row.createdAt,
        data: { reportId: row.id, repoId: row.repoId, repoUrl: row.repoUrl, level: row.level, uploadedBy: row.uploadedBy },
      });
    });
    return toReportView(row);
  }

  /** Newest first; `startAfter` must be a report of the organization (else 400), `limit` is capped at MAX_PAGE. */
  async list(principal: Principal, query: { repoId?: string; limit?: number; startAfter?: string }): Promise<ReadinessReportView[]> {
    let after: { createdAt: Date; id: string } | undefined;
    if (query.startAfter !== undefined) {
      const position = isUuid(query.startAfter) ? await this.repository.position(principal.organizationId, query.startAfter.toLowerCase()) : null;
      if (!position) {
        throw new ReadinessError(
          ReadinessErrorCode.UnknownCursor,
          'startAfter: is not the reportId of a report of your organization; pass the reportId of the last report of the previous page',
          {
            errors: [{ field: 'startAfter', message: 'is not the reportId of a report of your organization' }],
          },
        );
      }
      after = position;
    }
    const rows = await this.repository.list(principal.organizationId, { repoId: query.repoId, after }, Math.min(query.limit ?? DEFAULT_PAGE, MAX_PAGE));
    return rows.map(toReportView);
  }

  repositories(principal: Principal): Promise<RepositoryView[]> {
    return this.repository.repositories(principal.organizationId);
  }

  async organizationLevel(principal: Principal): Promise<{ level: number | null; levelName: string | null; repositories: number }> {
    const repositories = await this.repository.repositories(principal.organizationId);
    const level = organizationLevel(repositories.map((repository) => repository.level));
    return { level, levelName: level === null ? null : LEVEL_NAMES[level - 1], repositories: repositories.length };
  }

  /** A repository's level over time (its newest reports, oldest first); 404 when the organization has no report of it. */
  async levelHistory(principal: Principal, repoId: string, limit = DEFAULT_HISTORY): Promise<{ repoId: string; levels: LevelPointView[] }> {
    const levels = await this.repository.levels(principal.organizationId, repoId, Math.min(limit, MAX_HISTORY));
    if (levels.length === 0) {
      throw repositoryNotFound(repoId);
    }
    return { repoId, levels };
  }
}
