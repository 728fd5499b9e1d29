import { Injectable } from '@nestjs/common';
import type { Principal } from '../../auth';

/** Whether the caller may see a computer (members see only their own, guests none). */
export type ComputerVisibility = (principal: Principal, computerId: string) => Promise<boolean>;

/**
 * Where Sessions learns whether a `computerId` names a computer the caller may use. The Computers
 * module depends on Sessions (its install logs are sessions), so it binds its lookup here at
 * start-up rather than being imported; unbound, no computer exists and every computerId is 404.
 */
@Injectable()
export class ComputerDirectory {
  private visible: ComputerVisibility = () => Promise.resolve(false);

  bind(visible: ComputerVisibility): void {
    this.visible = visible;
  }

  visibleTo(principal: Principal, computerId: string): Promise<boolean> {
    return this.visible(principal, computerId);
  }
}
