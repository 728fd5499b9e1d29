import type { SecurityActor } from '../../../platform/logging/security-log';
import type { OrganizationFeatures } from '../entities/organization.entity';
import { Role } from './role';

/** Who is calling: API keys and JWTs both resolve to this. */
export interface Principal {
  userId: string;
  organizationId: string;
  role: Role;
  email: string;
  name: string;
  /**
   * How the caller proved who it is. A computer's agent token acts for the computer's owner, on
   * the agent channel only, and only for work routed to that computer.
   */
  credential: { kind: 'api_key'; apiKeyId: string } | { kind: 'jwt' } | { kind: 'computer'; computerId: string };
  /** The organization's feature flags, read with the credential (no extra query per request). */
  features: OrganizationFeatures;
}

/** A stable id for the credential a principal used, safe to log and to key limits on. */
export function credentialIdOf(principal: Pick<Principal, 'userId' | 'credential'>): string {
  switch (principal.credential.kind) {
    case 'api_key':
      return principal.credential.apiKeyId;
    case 'computer':
      return `computer:${principal.credential.computerId}`;
    case 'jwt':
      return `jwt:${principal.userId}`;
  }
}

/** Who did a security-relevant action, for the security log. */
export function securityActorOf(principal: Principal): SecurityActor {
  return { organizationId: principal.organizationId, userId: principal.userId, credentialId: credentialIdOf(principal) };
}
