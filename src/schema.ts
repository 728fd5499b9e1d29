import { ApiKeyEntity, OrganizationEntity, UserEntity } from './modules/auth/entities';
import { Foundation1763712000000 } from './migrations/1763712000000-Foundation';

/** Every entity and migration of the platform; modules add theirs here. */
export const entities = [OrganizationEntity, UserEntity, ApiKeyEntity];
export const migrations = [Foundation1763712000000];
