import type { Principal } from '../../auth';

/**
 * Where Sessions learns whether a `computerId` names a computer the caller may use (members see
 * only their own, guests none): a contract the Computers module fulfils (it imports Sessions, whose
 * sessions hold its install logs). Resolved at start.
 */
export abstract class ComputerDirectory {
  abstract visibleTo(principal: Principal, computerId: string): Promise<boolean>;
}
