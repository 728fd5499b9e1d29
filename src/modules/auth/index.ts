export { AuthModule } from './auth.module';
export { ApiKeysService } from './api-keys.service';
export { OrganizationsService } from './organizations.service';
export { Authenticated, CurrentPrincipal, Public } from './auth.decorators';
export { AccessPolicy } from './domain/access-policy';
export type { Principal } from './domain/principal';
export { Role, ROLES, ADMIN_ROLES, isAdmin } from './domain/role';
export { OrganizationControlsReader } from './organization-controls.reader';
export type { AuthControls } from './organization-controls.reader';
