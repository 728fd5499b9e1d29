export { ApiKeyEntity } from './api-key.entity';
export { OrganizationEntity } from './organization.entity';
export { UserEntity } from './user.entity';
