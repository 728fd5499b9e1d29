import type { CallerRow } from './auth.repository';

/** The computer a token hash belongs to, and its owner as a caller. */
export type ComputerCaller = CallerRow & { computer_id: string };

/**
 * Where Auth resolves computers' agent tokens: a contract the Computers module fulfils (it owns the
 * tokens, which live and die with the computer; it imports Auth). Resolved at start.
 */
export abstract class ComputerTokenLookup {
  abstract byHash(tokenHash: string): Promise<ComputerCaller | null>;
}

/** No computer, so no valid token: for programs without the Computers module (the CLI). */
export class NoComputerTokens extends ComputerTokenLookup {
  byHash(): Promise<null> {
    return Promise.resolve(null);
  }
}
