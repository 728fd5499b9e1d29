export { AuthModule } from './auth.module';
export { ApiKeysService } from './api-keys.service';
export { OrganizationsService } from './organizations.service';
export { MembersService, actorOf } from './members.service';
export type { MembersActor } from './members.service';
export { SetupService } from './setup.service';
export { AcceptsComputerTokens, AgentTokensOnly, Authenticated, CurrentPrincipal, Public, WorkerCredentials } from './auth.decorators';
export { Authenticator, parseBearer } from './authenticator';
export { RequestAuthentication } from './request-authentication';
export type { RequestIdentity } from './request-authentication';
export { ComputerTokenLookup, NoComputerTokens } from './contracts/computer-token-lookup';
export type { TokenComputer } from './contracts/computer-token-lookup';
export { NoWorkerSessions, WorkerSessionLookup } from './contracts/worker-session-lookup';
export type { SessionWorker } from './contracts/worker-session-lookup';
export {
  generateComputerToken,
  generateWorkerEnrollmentToken,
  generateWorkerSessionToken,
  hashApiKey as hashToken,
  isWellFormedWorkerEnrollmentToken,
  isWellFormedWorkerSessionToken,
} from './domain/api-key-secret';
export { AccessPolicy } from './domain/access-policy';
export type { Principal } from './domain/principal';
export { actingAs, credentialIdOf, eventActorOf, OPERATOR, securityActorOf } from './domain/principal';
export type { ActingAs } from './domain/principal';
export * from './events';
export { Role, ROLES, ADMIN_ROLES, isAdmin } from './domain/role';
export { UserKind, USER_KINDS } from './domain/user-kind';
export { DefaultControlsReader, OrganizationControlsReader } from './contracts/organization-controls-reader';
export type { AuthControls, OrganizationControls } from './contracts/organization-controls-reader';
export { DEFAULT_CONTROLS } from './contracts/organization-controls-reader';
