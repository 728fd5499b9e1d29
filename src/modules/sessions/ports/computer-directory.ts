import { Injectable } from '@nestjs/common';

/**
 * Where Sessions learns whether a computer belongs to an organization. The Computers module binds
 * its own implementation; until it exists, no organization has computers, so every computerId
 * answers 404.
 */
export abstract class ComputerDirectory {
  abstract belongsTo(organizationId: string, computerId: string): Promise<boolean>;
}

@Injectable()
export class NoComputers extends ComputerDirectory {
  belongsTo(): Promise<boolean> {
    return Promise.resolve(false);
  }
}
