import { Column, CreateDateColumn, Entity, PrimaryColumn, Unique } from 'typeorm';

/** Features enabled per organization (the spec's "enabled for selected organizations only"). */
export interface OrganizationFeatures {
  messageHistory?: boolean;
}

@Entity({ name: 'organizations' })
@Unique('organizations_slug_key', ['slug'])
export class OrganizationEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'organizations_pkey' })
  id: string;

  @Column({ type: 'varchar', length: 63 })
  slug: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'jsonb', default: {} })
  features: OrganizationFeatures;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
