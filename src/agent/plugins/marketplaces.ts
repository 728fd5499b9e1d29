import { createHash } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { AgentPolicy } from '../../contract/agent-channel';
import { marketplaceUrl } from '../../contract/marketplaces';
import { runInProcessGroup } from '../process-group';
import { Sandbox, SandboxRefusal } from '../sandbox/sandbox';
import { commandEnvironment } from '../tools/execute';
import { shellQuote } from '../tools/shell-syntax';

export type KnownMarketplace = AgentPolicy['extraKnownMarketplaces'][string];
export type StrictMarketplace = AgentPolicy['strictKnownMarketplaces'][number];
/** A marketplace checked out: its folder, and the commit there. */
export interface Checkout {
  dir: string;
  commit: string;
}

// The rule is shared with the server (its plugin catalog says which marketplaces agents may use).
export { marketplaceRule, marketplaceUrl } from '../../contract/marketplaces';

/** Seconds one git command of a marketplace checkout may take. */
const GIT_TIMEOUT_SECONDS = 120;

/**
 * Marketplace checkouts under the agent's state folder, one per address and commit asked for, fetched with
 * git once per agent process (a pinned commit once for good). git runs as commands do: confined by the
 * organization's sandbox and network policy, with no prompt, and with only the https, ssh, git and file
 * transports (never `ext::`, which runs a command).
 */
export class Marketplaces {
  private readonly fetched = new Map<string, Promise<Checkout>>();
  private readonly sandbox = new Sandbox({ nested: process.env.AGENT_NESTED_SANDBOX === '1' });

  constructor(private readonly stateDir: string) {}

  /** The folder holding the marketplace at the commit the rule asks for, and that commit; an Error saying why not. */
  checkout(known: KnownMarketplace, rule: { ref?: string; sha?: string }, policy: Pick<AgentPolicy, 'sandbox' | 'networkPolicy'>): Promise<Checkout> {
    const url = marketplaceUrl(known);
    const key = createHash('sha256')
      .update(JSON.stringify([url, rule.ref ?? null, rule.sha ?? null]))
      .digest('hex')
      .slice(0, 24);
    let done = this.fetched.get(key);
    if (!done) {
      done = this.fetch(url, rule, join(this.stateDir, 'plugins', 'marketplaces', key), policy);
      // A failure is tried again at the next turn.
      done.catch(() => this.fetched.delete(key));
      this.fetched.set(key, done);
    }
    return done;
  }

  private async fetch(
    url: string,
    rule: { ref?: string; sha?: string },
    dir: string,
    policy: Pick<AgentPolicy, 'sandbox' | 'networkPolicy'>,
  ): Promise<Checkout> {
    if (rule.sha && (await this.head(dir, policy).catch(() => null)) === rule.sha) return { dir, commit: rule.sha };
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await this.git(['init', '-q'], dir, policy);
    const wanted = rule.sha ?? rule.ref ?? 'HEAD';
    try {
      await this.git(['fetch', '-q', '--depth', '1', url, wanted], dir, policy);
    } catch (error) {
      // A host that does not serve commits by id: the pinned ref, whole, where the commit must be.
      if (!rule.sha) throw error;
      await this.git(['fetch', '-q', url, rule.ref ?? 'HEAD'], dir, policy);
    }
    await this.git(['checkout', '-q', '--detach', rule.sha ?? 'FETCH_HEAD'], dir, policy);
    const head = await this.head(dir, policy);
    if (rule.sha && head !== rule.sha) throw new Error(`${url} is at ${head}, not at the commit strictKnownMarketplaces pins (${rule.sha})`);
    return { dir, commit: head };
  }

  private async head(dir: string, policy: Pick<AgentPolicy, 'sandbox' | 'networkPolicy'>): Promise<string> {
    await stat(join(dir, '.git'));
    return (await this.git(['rev-parse', 'HEAD'], dir, policy)).trim();
  }

  private async git(args: string[], dir: string, policy: Pick<AgentPolicy, 'sandbox' | 'networkPolicy'>): Promise<string> {
    const argv = [
      'git',
      '-c',
      'core.hooksPath=/dev/null',
      '-c',
      'protocol.allow=never',
      ...PROTOCOLS.flatMap((p) => ['-c', `protocol.${p}.allow=always`]),
      ...args,
    ];
    let confined;
    try {
      confined = await this.sandbox.confine(argv.map(shellQuote).join(' '), policy, dir);
    } catch (error) {
      if (error instanceof SandboxRefusal) throw new Error(error.message);
      throw error;
    }
    let stdout = '';
    let stderr = '';
    const ended = await runInProcessGroup({
      file: confined ? confined.file : argv[0],
      args: confined ? confined.args : argv.slice(1),
      cwd: dir,
      env: { ...commandEnvironment(), GIT_TERMINAL_PROMPT: '0', GIT_ALLOW_PROTOCOL: PROTOCOLS.join(':'), ...(confined?.env ?? {}) },
      timeoutMs: GIT_TIMEOUT_SECONDS * 1000,
      onStdout: (text) => (stdout += text),
      onStderr: (text) => (stderr = (stderr + text).slice(-1000)),
    });
    await confined?.cleanup();
    if (ended.startError) throw new Error(`git could not start: ${ended.startError.message}`);
    if (ended.ending === 'timeout') throw new Error(`git ${args[0]} did not finish within ${GIT_TIMEOUT_SECONDS} s`);
    if (ended.exitCode !== 0) throw new Error(`git ${args[0]} failed: ${stderr.trim() || `exit ${ended.exitCode ?? ended.exitSignal}`}`);
    return stdout;
  }
}

/** The transports a marketplace may be fetched over. */
const PROTOCOLS = ['https', 'http', 'ssh', 'git', 'file'];
