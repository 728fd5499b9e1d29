import { Injectable } from '@nestjs/common';
import type { CallerRow } from './auth.repository';

/** The computer a token hash belongs to, and its owner as a caller; null for an unknown token. */
export type FindComputerCaller = (tokenHash: string) => Promise<(CallerRow & { computer_id: string }) | null>;

/**
 * Where Auth resolves computers' agent tokens. Computers owns the tokens (they live and die with
 * the computer) and binds its lookup here at start-up; until it does, no token is valid.
 */
@Injectable()
export class ComputerTokenLookup {
  private find: FindComputerCaller = () => Promise.resolve(null);

  bind(find: FindComputerCaller): void {
    this.find = find;
  }

  byHash(tokenHash: string): ReturnType<FindComputerCaller> {
    return this.find(tokenHash);
  }
}
