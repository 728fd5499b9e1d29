import { Injectable, Logger } from '@nestjs/common';
import { AnalyticsRollupJob } from '../modules/analytics';
import { Principal, Role } from '../modules/auth';
import { DemoComputers } from './demo-computers';
import { DemoControls } from './demo-controls';
import { DemoConversations } from './demo-conversations';
import { DemoHistory } from './demo-history';

/** The demo's work: conversations, past sessions and their rollup, computers and controls, in the order they depend on. */
@Injectable()
export class DemoWork {
  private readonly logger = new Logger(DemoWork.name);

  constructor(
    private readonly conversations: DemoConversations,
    private readonly history: DemoHistory,
    private readonly rollup: AnalyticsRollupJob,
    private readonly computers: DemoComputers,
    private readonly controls: DemoControls,
  ) {}

  /** Conversations, history, computers and controls, in this order; the computers' agent tokens. */
  async seed(as: (org: string, role: Role) => Promise<Principal>): Promise<Record<string, string>> {
    await this.conversations.seedAcme({
      owner: await as('acme', Role.Owner),
      manager: await as('acme', Role.Manager),
      member: await as('acme', Role.Member),
    });
    await this.conversations.seedGlobex({ owner: await as('globex', Role.Owner) });
    // After today's conversations (they go only where there are no sessions): past work, then its rollup.
    const imported = await this.history.seedAcme({
      owner: await as('acme', Role.Owner),
      manager: await as('acme', Role.Manager),
      member: await as('acme', Role.Member),
      guest: await as('acme', Role.Guest),
    });
    if (imported > 0) this.logger.log(`Demo history: ${imported} past sessions`);
    await this.rollup.runNow();
    // After the conversations: a managed computer's provisioning log is a session, and conversations go only where there are none.
    const tokens = await this.computers.seedAcme({
      owner: await as('acme', Role.Owner),
      manager: await as('acme', Role.Manager),
      member: await as('acme', Role.Member),
    });
    // Last: the controls' model policy and defaults apply to sessions created after them.
    await this.controls.seedAcme({ owner: await as('acme', Role.Owner), manager: await as('acme', Role.Manager) });
    return tokens;
  }
}
