/**
 * The four roles of an organization member; each user holds exactly one. A union of its strings rather than an enum,
 * so the request types generated from the API's schemas (plain string literals) are Roles as they are.
 */
export const Role = { Owner: 'owner', Manager: 'manager', Member: 'member', Guest: 'guest' } as const;
export type Role = (typeof Role)[keyof typeof Role];

export const ROLES: readonly Role[] = [Role.Owner, Role.Manager, Role.Member, Role.Guest];

/** Owners and managers see and manage everything in their organization. */
export const ADMIN_ROLES: readonly Role[] = [Role.Owner, Role.Manager];

export function isAdmin(role: Role): boolean {
  return ADMIN_ROLES.includes(role);
}

/** How far a role reaches: one may grant, change and remove only up to one's own. */
export function rankOf(role: Role): number {
  return ROLES.length - ROLES.indexOf(role);
}
