import { Injectable, Logger } from '@nestjs/common';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppConfig } from '../config/app-config';
import { Role } from '../modules/auth';
import { Authenticator } from '../modules/auth/authenticator';
import { DEMO_KEYS_FILE, DemoAccounts, DemoKeys } from './demo-accounts';
import { DemoReadiness } from './demo-readiness';
import { DemoWork } from './demo-work';

/** The demo computers' agent tokens, written when they are created (tokens are shown only once). */
export const DEMO_AGENT_TOKENS_FILE = 'demo-agent-tokens.json';

/**
 * Seeds the demo organizations, idempotently: existing organizations and users are kept, and a
 * key already in demo-keys.json is reused while it still works, so a second run changes nothing.
 */
@Injectable()
export class DemoSeeder {
  private readonly logger = new Logger(DemoSeeder.name);

  constructor(
    private readonly config: AppConfig,
    private readonly accounts: DemoAccounts,
    private readonly authenticator: Authenticator,
    private readonly work: DemoWork,
    private readonly readiness: DemoReadiness,
  ) {}

  async seed(): Promise<DemoKeys> {
    const path = join(this.config.dataDir, DEMO_KEYS_FILE);
    const keys = await this.accounts.ensure();
    const as = (org: string, role: Role) => this.authenticator.authenticate(`Bearer ${keys[org][role]}`);
    const [tokens] = await Promise.all([this.work.seed(as), this.readiness.seedAcme(await as('acme', Role.Manager))]);
    await mkdir(this.config.dataDir, { recursive: true });
    if (Object.keys(tokens).length > 0) {
      await writeFile(join(this.config.dataDir, DEMO_AGENT_TOKENS_FILE), JSON.stringify(tokens, null, 2) + '\n', { mode: 0o600 });
    }
    await writeFile(path, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
    this.logger.log(`Demo organizations ready; their API keys are in ${path}`);
    return keys;
  }
}
