import { AccessPolicy } from './access-policy';
import { Principal } from './principal';
import { isAdmin, rankOf, Role, ROLES } from './role';

const ORG = '01a20000-0000-7000-8000-000000000001';
const OTHER_ORG = '01a20000-0000-7000-8000-000000000002';
const ME = '01a20000-0000-7000-8000-0000000000aa';
const SOMEONE = '01a20000-0000-7000-8000-0000000000bb';

const principal = (role: Role, organizationId = ORG): Principal => ({
  userId: ME,
  organizationId,
  role,
  email: 'me@example.test',
  name: 'Me',
  credential: { kind: 'api_key', apiKeyId: '01a20000-0000-7000-8000-0000000000cc' },
  features: {},
});

describe('Roles', () => {
  it('ranks owner > manager > member > guest, and only owners and managers are admins', () => {
    expect([...ROLES].sort((a, b) => rankOf(b) - rankOf(a))).toEqual([Role.Owner, Role.Manager, Role.Member, Role.Guest]);
    expect(ROLES.filter(isAdmin)).toEqual([Role.Owner, Role.Manager]);
  });
});

describe('AccessPolicy (sessions, computers)', () => {
  const mine = { organizationId: ORG, ownerId: ME };
  const theirs = { organizationId: ORG, ownerId: SOMEONE };
  const foreign = { organizationId: OTHER_ORG, ownerId: ME };

  // [role, read mine, read theirs, read theirs when member visibility is restricted, write mine, write theirs, create]
  it.each([
    [Role.Owner, true, true, true, true, true, true],
    [Role.Manager, true, true, true, true, true, true],
    [Role.Member, true, true, false, true, false, true],
    [Role.Guest, true, false, false, false, false, false],
  ])('%s', (role, readMine, readTheirs, readTheirsRestricted, writeMine, writeTheirs, create) => {
    const caller = principal(role);
    expect(AccessPolicy.canRead(caller, mine, false)).toBe(readMine);
    expect(AccessPolicy.canRead(caller, theirs, false)).toBe(readTheirs);
    expect(AccessPolicy.canRead(caller, theirs, true)).toBe(readTheirsRestricted);
    expect(AccessPolicy.canWrite(caller, mine)).toBe(writeMine);
    expect(AccessPolicy.canWrite(caller, theirs)).toBe(writeTheirs);
    expect(AccessPolicy.canCreate(caller)).toBe(create);
  });

  it.each(ROLES)('gives a %s nothing of another organization, even a resource "owned" by the same user id', (role) => {
    const caller = principal(role);
    expect(AccessPolicy.canRead(caller, foreign, false)).toBe(false);
    expect(AccessPolicy.canWrite(caller, foreign)).toBe(false);
    expect(AccessPolicy.canRead(principal(role, OTHER_ORG), mine, false)).toBe(false);
  });
});
