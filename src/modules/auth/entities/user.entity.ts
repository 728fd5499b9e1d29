import { Column, CreateDateColumn, Entity, Index, ManyToOne, JoinColumn, PrimaryColumn } from 'typeorm';
import { Role } from '../domain/role';
import { UserKind } from '../domain/user-kind';
import { OrganizationEntity } from './organization.entity';

@Entity({ name: 'users' })
@Index('users_organization_email_key', ['organizationId', 'email'], { unique: true })
@Index('users_organization_created_idx', ['organizationId', 'createdAt', 'id'])
export class UserEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'users_pkey' })
  id: string;

  @PrimaryColumn({ name: 'organization_id', type: 'uuid', primaryKeyConstraintName: 'users_pkey' })
  organizationId: string;

  @ManyToOne(() => OrganizationEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'organization_id', foreignKeyConstraintName: 'users_organization_id_fkey' })
  organization?: OrganizationEntity;

  /** Stored lower-cased, so one address is one user per organization. */
  @Column({ type: 'varchar', length: 320 })
  email: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 16 })
  role: Role;

  /** A person, or a service account (computers may be created for it with `serviceAccountId`). */
  @Column({ type: 'varchar', length: 16, default: UserKind.Human })
  kind: UserKind;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  /** Set when an owner or manager removed the user: no credential of theirs works; what they made stays. */
  @Column({ name: 'removed_at', type: 'timestamptz', precision: 3, nullable: true })
  removedAt: Date | null;
}
