import { createHash } from 'node:crypto';
import type { PluginCatalogReport } from '../../contract/agent-channel';
import type { PluginPolicy, Plugins } from './plugins';

/**
 * Tells the server what this agent finds of the organization's marketplaces (their plugins, or why they could not be
 * read), so that the console can show what there is to enable. In the background of the turn that asked: a marketplace
 * out of reach never holds a turn up. A marketplace is reported only when what was found differs from what this
 * process last reported of it. Best effort: a report that fails is said in the log (once) and sent again after a later
 * turn; it never fails a turn.
 */
export class CatalogReports {
  /** By marketplace name: the hash of the report the server took last. */
  private readonly sent = new Map<string, string>();
  private readonly said = new Set<string>();
  private running: Promise<void> | null = null;
  /** The policy of the latest turn not reported yet: only the latest is worth reporting. */
  private waiting: PluginPolicy | null = null;

  constructor(
    private readonly plugins: Plugins,
    private readonly send: (report: PluginCatalogReport) => Promise<void>,
    private readonly log: (line: string) => void,
  ) {}

  /** Reports the marketplaces under this policy once the report under way (if any) is done. */
  report(policy: PluginPolicy): void {
    this.waiting = policy;
    if (this.running) return;
    this.running = this.drain()
      .catch((error: Error) => this.log(`the plugin catalogs were not reported: ${error.message}`))
      .finally(() => {
        this.running = null;
        if (this.waiting) this.report(this.waiting);
      });
  }

  private async drain(): Promise<void> {
    for (let policy = this.waiting; policy; policy = this.waiting) {
      this.waiting = null;
      for (const report of await this.plugins.catalogs(policy)) {
        const hash = createHash('sha256').update(JSON.stringify(report)).digest('hex');
        if (this.sent.get(report.marketplace) === hash) continue;
        try {
          await this.send(report);
          this.sent.set(report.marketplace, hash);
        } catch (error) {
          const line = `the plugin catalog of marketplace "${report.marketplace}" was not reported: ${(error as Error).message}`;
          if (!this.said.has(line)) this.log(line);
          this.said.add(line);
        }
      }
    }
  }
}
