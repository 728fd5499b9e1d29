import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { Evaluation } from '../domain/criteria';
import type { ReasoningEffort } from '../domain/report';

/** One readiness report of one repository, as uploaded; `level` is computed from it on upload. */
@Entity({ name: 'readiness_reports' })
@Index('readiness_reports_organization_created_idx', ['organizationId', 'createdAt', 'id'])
@Index('readiness_reports_repository_created_idx', ['organizationId', 'repoId', 'createdAt', 'id'])
export class ReadinessReportEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'readiness_reports_pkey' })
  id: string;

  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'readiness_reports_pkey' })
  @ForeignKey('OrganizationEntity', { name: 'readiness_reports_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId: string;

  @Column({ name: 'repo_id', type: 'varchar', length: 32 })
  repoId: string;

  @Column({ name: 'repo_url', type: 'text' })
  repoUrl: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  /** `json`, not `jsonb`: applications and criteria keep the order they were uploaded in. */
  @Column({ type: 'json' })
  apps: Record<string, { description: string }>;

  @Column({ type: 'json' })
  report: Record<string, Evaluation>;

  @Column({ name: 'commit_hash', type: 'varchar', length: 64, nullable: true })
  commitHash: string | null;

  @Column({ type: 'varchar', length: 255, nullable: true })
  branch: string | null;

  @Column({ name: 'has_local_changes', type: 'boolean', nullable: true })
  hasLocalChanges: boolean | null;

  @Column({ name: 'has_non_remote_commits', type: 'boolean', nullable: true })
  hasNonRemoteCommits: boolean | null;

  @Column({ name: 'model_used', type: 'json', nullable: true })
  modelUsed: { id: string; reasoningEffort: ReasoningEffort } | null;

  @Column({ name: 'agent_version', type: 'varchar', length: 64, nullable: true })
  agentVersion: string | null;

  /** The maturity level (1-5) the report's criteria give. */
  @Column({ type: 'smallint' })
  level: number;

  @Column({ name: 'uploaded_by', type: 'uuid' })
  uploadedBy: string;
}
