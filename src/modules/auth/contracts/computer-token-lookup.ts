/** The computer an agent token belongs to: what Auth needs to act for its owner. */
export interface TokenComputer {
  computerId: string;
  organizationId: string;
  ownerId: string;
}

/**
 * Where Auth resolves computers' agent tokens: a contract the Computers module fulfils (it owns the
 * tokens, which live and die with the computer; it imports Auth). It answers the computer and its
 * owner's id; the owner as a caller (role, email, features) is Auth's own read. Resolved at start.
 */
export abstract class ComputerTokenLookup {
  abstract byHash(tokenHash: string): Promise<TokenComputer | null>;
}

/** No computer, so no valid token: for programs without the Computers module (the CLI). */
export class NoComputerTokens extends ComputerTokenLookup {
  byHash(): Promise<null> {
    return Promise.resolve(null);
  }
}
