import type { Principal } from '../../auth';

/**
 * Where Sessions learns whether a `computerId` names a computer the caller may use (members see
 * only their own, guests none): a contract the Computers module fulfils (it imports Sessions, whose
 * sessions hold its install logs). Resolved at start.
 */
export abstract class ComputerVisibility {
  abstract visibleTo(principal: Principal, computerId: string): Promise<boolean>;
  /**
   * Why the organization's controls keep a computer from taking new work (its kind is turned off, or
   * its owner is not on the kind's email list), or null: the control's name and a sentence.
   */
  abstract workRefusal(organizationId: string, computerId: string): Promise<{ control: string; detail: string } | null>;
}
