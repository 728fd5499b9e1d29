import { Injectable } from '@nestjs/common';
import { ComputerTokenLookup, TokenComputer } from '../../auth';
import { ComputersRepository } from '../computers.repository';

/** Auth's ComputerTokenLookup, kept from the computers table: the computer an agent token's hash belongs to, and its owner. */
@Injectable()
export class ComputerTokenLookupFromTable extends ComputerTokenLookup {
  constructor(private readonly repository: ComputersRepository) {
    super();
  }

  byHash(tokenHash: string): Promise<TokenComputer | null> {
    return this.repository.findByTokenHash(tokenHash);
  }
}
