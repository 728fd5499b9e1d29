import type { SecurityActor } from '../../../platform/logging/security-log';
import type { OrganizationFeatures } from '../entities/organization.entity';
import { Role } from './role';
import type { EventActor } from '../../../platform/events';

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

/** Who caused an event, for the event log and the audit log (the request's address is added there). */
export function eventActorOf(principal: Principal): EventActor {
  const { credential } = principal;
  return {
    kind: credential.kind === 'computer' ? 'computer' : 'user',
    userId: principal.userId,
    email: principal.email,
    role: principal.role,
    credential: credential.kind === 'computer' ? 'agent_token' : credential.kind,
    ...(credential.kind === 'api_key' ? { credentialId: credential.apiKeyId } : {}),
    ...(credential.kind === 'computer' ? { computerId: credential.computerId } : {}),
  };
}

/** Who acts, as the security log and the event log each record it. */
export interface ActingAs {
  security: SecurityActor;
  event: EventActor;
}

export function actingAs(principal: Principal): ActingAs {
  return { security: securityActorOf(principal), event: eventActorOf(principal) };
}

/** The operator, through the CLI on the server's machine. */
export const OPERATOR: ActingAs = { security: { credentialId: 'operator' }, event: { kind: 'operator' } };
