import { Principal } from './principal';
import { isAdmin, Role } from './role';

/**
 * The role matrix for organization resources that belong to a user (sessions, computers):
 * - owner, manager: read and write everything in the organization;
 * - member: reads and writes their own; reads all the organization's sessions unless
 *   `restrictMemberVisibility` is on;
 * - guest: reads only their own sessions; writes nothing.
 * Resources of another organization are never visible (callers answer 404).
 */
export const AccessPolicy = {
  canRead(principal: Principal, resource: { organizationId: string; ownerId: string }, restrictMemberVisibility: boolean): boolean {
    if (resource.organizationId !== principal.organizationId) return false;
    if (isAdmin(principal.role) || resource.ownerId === principal.userId) return true;
    return principal.role === Role.Member && !restrictMemberVisibility;
  },

  canWrite(principal: Principal, resource: { organizationId: string; ownerId: string }): boolean {
    if (resource.organizationId !== principal.organizationId) return false;
    if (isAdmin(principal.role)) return true;
    return principal.role === Role.Member && resource.ownerId === principal.userId;
  },

  /** Whether the caller may create resources at all (guests may not). */
  canCreate(principal: Principal): boolean {
    return principal.role !== Role.Guest;
  },
};
