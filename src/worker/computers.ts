import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { OrganizationIps } from '../contract/address-policy';
import { describe } from '../contract/retrying-request';
import type { PlacedComputer } from '../contract/worker-channel';
import { AgentProcesses } from '../host/agent-processes';
import type { HostLogger, HostSecurityLog } from '../host/host-log';
import { AGENT_STATE_DIR, HostProvisioner } from '../host/host-provisioner';
import { ApiTarget, HostSandbox } from '../host/host-sandbox';
import { allowedIpsOf, NO_ADDRESSES } from '../host/network-policy';
import type { WorkerConfig } from './config';
import { planReconcile } from './reconcile';
import { uplink } from './uplink';
import type { WorkerClient } from './worker-client';

/** Inside a sandbox, the loopback port the platform answers on (its own network namespace: any free port will do). */
const SANDBOX_API_PORT = 8080;
/** An organization's policy is read again after this long: a narrowed networkPolicy reaches new runs within seconds. */
const POLICY_CACHE_MS = 5_000;
const COMPUTER_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The computers a worker holds: provisioned by the host library in `<dataDir>/computers`, their agents run in their
 * sandboxes as the server runs its own, the agents reaching the server through the uplink (no port opened on the
 * worker). `reconcile` makes them match what the server places on the worker. Agent tokens stay in memory.
 */
export class WorkerComputers {
  readonly provisioner: HostProvisioner;
  private readonly sandbox: HostSandbox;
  private readonly agents: AgentProcesses;
  private readonly computersDir: string;
  /** The agent tokens fetched, by computer: never written anywhere. */
  private readonly tokens = new Map<string, string>();
  private readonly policy = { ips: null as OrganizationIps | null, readAt: 0 };
  /** Computers whose sandbox cannot start or whose workspace is not here, by the reason: said once, not at every look. */
  private readonly said = new Map<string, string>();
  /** When each computer's step was last claimed: a heartbeat asked before it may not list the computer yet. */
  private readonly claimedAt = new Map<string, number>();
  private readonly running = new Set<string>();
  private placed: readonly PlacedComputer[] = [];
  /** The pool's organization, as claims say it (heartbeats do not). */
  private organizationId: string | undefined;
  private stopping = false;
  private latest: { desired: readonly PlacedComputer[]; askedAt: number } | null = null;
  private reconciling: Promise<void> | null = null;

  constructor(
    config: WorkerConfig,
    private readonly client: WorkerClient,
    private readonly session: () => string | null,
    private readonly logger: HostLogger,
  ) {
    this.computersDir = join(config.dataDir, 'computers');
    const securityLog: HostSecurityLog = (action, actor, details) =>
      logger.warn(`security: ${action} ${JSON.stringify({ organizationId: actor.organizationId, ...details })}`);
    const api: ApiTarget = { api: { kind: 'http', handle: uplink(config.url) }, port: SANDBOX_API_PORT, url: config.url };
    this.sandbox = new HostSandbox(
      { enabled: config.sandboxed, ...config.host },
      { apiTarget: () => api, allowedIps: () => this.allowedIps(), logger, securityLog },
    );
    this.provisioner = new HostProvisioner(
      {
        computersDir: this.computersDir,
        localReposDir: config.host.localReposDir,
        installScripts: config.host.installScripts,
        workspaceMaxMb: config.host.workspaceMaxMb,
        hostName: "its worker's host",
      },
      this.sandbox,
    );
    this.agents = new AgentProcesses({
      sandbox: this.sandbox,
      workspaces: this.provisioner,
      logger,
      url: () => config.url,
      stopping: () => this.stopping,
    });
  }

  /** Why this host cannot make a computer's sandbox (bubblewrap missing, no user namespaces); null when it can, or sandboxing is off. */
  sandboxUnavailable(): Promise<string | null> {
    return this.sandbox.unavailable('startup-probe');
  }

  /** A step of the computer was claimed: its folders are not torn down by an answer that predates it. */
  stepStarted(computerId: string, organizationId: string): void {
    this.organizationId = organizationId;
    this.claimedAt.set(computerId, Date.now());
    this.running.add(computerId);
  }

  stepEnded(computerId: string): void {
    this.running.delete(computerId);
    this.claimedAt.set(computerId, Date.now());
  }

  /**
   * Makes what this worker holds match `desired` (a heartbeat's answer, asked at `askedAt`); resolves once it does.
   * Answers coming meanwhile are applied after, the latest only.
   */
  reconcile(desired: readonly PlacedComputer[], askedAt: number): Promise<void> {
    this.latest = { desired, askedAt };
    this.reconciling ??= this.drain().finally(() => (this.reconciling = null));
    return this.reconciling;
  }

  /** Stops every agent (the worker is leaving); their folders stay, for a restart that resumes the session. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.reconciling;
    await Promise.all(this.agents.computerIds().map((computerId) => this.agents.retire(computerId, 'SIGTERM')));
  }

  /** The session ended: every agent killed, every computer's folders removed. */
  async removeAll(): Promise<void> {
    this.stopping = true;
    await this.reconciling;
    await Promise.all(this.agents.computerIds().map((computerId) => this.agents.retire(computerId, 'SIGKILL')));
    for (const computerId of (await this.folders()).folders) await this.provisioner.teardown(computerId);
    this.tokens.clear();
  }

  private async drain(): Promise<void> {
    while (this.latest && !this.stopping) {
      const { desired, askedAt } = this.latest;
      this.latest = null;
      try {
        await this.apply(desired, askedAt);
      } catch (error) {
        this.logger.error(`Could not bring this worker's computers up to date: ${describe(error)}`);
      }
    }
  }

  private async apply(desired: readonly PlacedComputer[], askedAt: number): Promise<void> {
    this.placed = desired;
    const busy = new Set([...this.running, ...[...this.claimedAt].filter(([, at]) => at >= askedAt).map(([computerId]) => computerId)]);
    const agents = new Map(this.agents.computerIds().map((computerId) => [computerId, this.agents.versionOf(computerId)]));
    const plan = planReconcile(desired, { ...(await this.folders()), agents, busy });
    for (const { computerId, signal } of plan.retire) {
      await this.agents.retire(computerId, signal);
      this.logger.log(`The agent of computer ${computerId} was stopped: the computer is ${signal === 'SIGKILL' ? 'no longer placed here' : 'not active'}`);
    }
    for (const computerId of plan.teardown) {
      await this.provisioner.teardown(computerId);
      this.tokens.delete(computerId);
      this.said.delete(computerId);
      this.claimedAt.delete(computerId);
      this.logger.log(`Computer ${computerId} is no longer placed on this worker: its folders were removed`);
    }
    for (const { computerId, restart } of plan.start) {
      if (this.stopping) return;
      const unavailable = await this.sandbox.unavailable(computerId);
      if (unavailable) {
        if (this.said.get(computerId) !== unavailable)
          this.logger.error(`The agent of computer ${computerId} does not start: this host cannot sandbox it (${unavailable})`);
        this.said.set(computerId, unavailable);
        continue;
      }
      const issued = await this.fetchToken(computerId);
      if (!issued) continue;
      if (restart) {
        this.logger.log(`The token of computer ${computerId} was rotated: restarting its agent with the new one`);
        await this.agents.retire(computerId, 'SIGTERM');
      }
      await this.agents.start({ computerId, organizationId: this.organizationId ?? 'unknown', token: issued.token, version: String(issued.tokenIssuedAt) });
    }
  }

  /** The computers with a workspace here, and those with any folder here (workspace or agent state). */
  private async folders(): Promise<{ workspaces: Set<string>; folders: Set<string> }> {
    const names = async (dir: string) => (await readdir(dir).catch(() => [] as string[])).filter((name) => COMPUTER_ID.test(name));
    const workspaces = new Set(await names(this.computersDir));
    return { workspaces, folders: new Set([...workspaces, ...(await names(join(this.computersDir, AGENT_STATE_DIR)))]) };
  }

  private async fetchToken(computerId: string): Promise<{ token: string; tokenIssuedAt: number } | null> {
    const session = this.session();
    if (!session) return null;
    try {
      const answer = await this.client.agentToken(session, computerId);
      this.tokens.set(computerId, answer.agentToken);
      return { token: answer.agentToken, tokenIssuedAt: answer.tokenIssuedAt };
    } catch (error) {
      this.logger.warn(`The agent token of computer ${computerId} could not be had: ${describe(error)}`);
      return null;
    }
  }

  /**
   * The organization's allowed IPs, from its agent policy read with one of its computers' tokens (a worker's session
   * cannot read it), for a few seconds. Unknown (no token, the server away): no address at all.
   */
  private async allowedIps(): Promise<OrganizationIps | null> {
    if (Date.now() - this.policy.readAt < POLICY_CACHE_MS) return this.policy.ips;
    let ips: OrganizationIps | null = NO_ADDRESSES;
    try {
      const token = this.tokens.values().next().value ?? (await this.anyToken());
      if (token) ips = allowedIpsOf(await this.client.agentPolicy(token));
      else this.logger.warn("No computer's token to read the organization's policy with: sandboxes reach no address for now");
    } catch (error) {
      this.logger.warn(`The organization's policy could not be read (${describe(error)}): sandboxes reach no address for now`);
    }
    Object.assign(this.policy, { ips, readAt: Date.now() });
    return ips;
  }

  /** A token of any computer this worker holds or runs a step of. */
  private async anyToken(): Promise<string | undefined> {
    for (const computerId of new Set([...this.running, ...this.placed.map((computer) => computer.computerId)])) {
      const issued = await this.fetchToken(computerId);
      if (issued) return issued.token;
    }
    return undefined;
  }
}
