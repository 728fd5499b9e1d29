import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../../config/app-config';
import { AdvisoryLock } from '../../../platform/database/advisory-locks';
import { SessionLocks } from '../../../platform/database/session-locks';
import { OnDomainEvent, StoredEvent } from '../../../platform/events';
import { JobHandle, JobRunner } from '../../../platform/jobs';
import { ComputerStatus } from '../domain/computer-status';
import { logSecurityEvent } from '../../../platform/logging/security-log';
import { ComputersRepository } from '../computers.repository';
import { LOCAL_PROVIDER } from '../domain/computer';
import { AGENT_MAIN, AGENT_MODEL_SETTINGS, AgentProcesses, ORPHAN_GUARD } from '../../../host/agent-processes';
import { LocalAgentLauncher } from './local-agent-launcher';

const JOB_NAME = 'computers.local-agents';

/** How often each instance compares the agents it runs with the computers that need one. */
const RECONCILE_MS = 5_000;
/**
 * Runs the reference agent (`dist/agent/main.js`) of every active managed `local` computer whose
 * workspace is on this host: one child process per computer, with the computer's token (kept
 * encrypted in the database) in its environment, its output in the server's log, restarted with
 * backoff when it exits, replaced when the token is rotated, stopped when the computer is deleted
 * and when the server stops.
 *
 * With several instances on PostgreSQL, the instance that runs a computer's agent holds a
 * session-level advisory lock on it, on a connection of its own, for as long as the agent runs; a
 * dead instance's connection ends, PostgreSQL frees its locks, and another instance takes its
 * agents over at its next look (every few seconds). On PGlite the server is the only process.
 */
@Injectable()
export class LocalAgentSupervisor implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(LocalAgentSupervisor.name);
  /** The agents this instance runs, keyed by computer; each one's `version` is the stored envelope its token came from. */
  private readonly agents: AgentProcesses;
  /** Computers left without an agent by their organization's LOCAL_AGENTS_PER_ORGANIZATION: said once, not at every look. */
  private readonly overQuota = new Set<string>();
  private locks: SessionLocks | null = null;
  private enabled = false;
  private stopping = false;
  /** Looks at the computers, and stops, run one at a time in order: a deleted computer's agent is never started after its stop. */
  private queue: Promise<void> = Promise.resolve();
  /** The look every RECONCILE_MS, as the `computers.local-agents` job. */
  private job: JobHandle<void> | null = null;

  constructor(
    private readonly repository: ComputersRepository,
    private readonly launcher: LocalAgentLauncher,
    private readonly dataSource: DataSource,
    private readonly adapterHost: HttpAdapterHost,
    private readonly jobs: JobRunner,
    private readonly config: AppConfig,
  ) {
    this.agents = launcher.processes({ url: () => this.serverUrl(), stopping: () => this.stopping });
  }

  onApplicationBootstrap(): void {
    if (!this.config.LOCAL_AGENTS) return;
    if (this.config.LOCAL_SANDBOX && Object.keys(process.env).some((name) => AGENT_MODEL_SETTINGS.test(name) && process.env[name])) {
      this.logger.warn(
        "AGENT_MODEL_* are set, but sandboxed agents do not get them (the member's commands could read them): they use their organizations' custom models through the relay",
      );
    }
    if (!existsSync(AGENT_MAIN) || !existsSync(ORPHAN_GUARD)) {
      this.logger.warn(`LOCAL_AGENTS is on, but the agent is not built (${AGENT_MAIN} is missing): managed local computers get no agent from this server`);
      return;
    }
    const http = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (!http) return;
    this.enabled = true;
    if (this.config.engine === 'postgres') {
      this.locks = new SessionLocks(this.dataSource, 'agent-platform local agents', (error) => this.locksLost(error));
    }
    // The agents connect to this server: they start once it listens.
    http.once('listening', () => this.wake());
    this.job = this.jobs.register({ name: JOB_NAME, everyMs: RECONCILE_MS, run: () => this.exclusive(() => this.reconcile()) });
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (!this.enabled) return;
    this.stopping = true;
    await this.job?.stop();
    await this.exclusive(() => this.retireAll('SIGTERM'));
    await this.locks?.close();
  }

  /** Looks at the computers now rather than at the next tick (a computer became active, a token was rotated here). */
  wake(): void {
    if (this.enabled && !this.stopping) void this.job?.runNow();
  }

  /** Stops the computer's agent if it runs here, at once (the computer was deleted: its token is dead, its workspace about to go). */
  async stop(computerId: string): Promise<void> {
    if (this.enabled) await this.exclusive(() => this.retire(computerId, 'SIGKILL'));
  }

  /** On every instance: the one that runs the deleted computer's agent stops it now, not at its next look. */
  @OnDomainEvent('computer.deleted')
  onDeleted(event: StoredEvent<'computer.deleted'>): void {
    if (event.data.provider === LOCAL_PROVIDER && this.agents.has(event.data.computerId)) void this.stop(event.data.computerId);
  }

  @OnDomainEvent('computer.status_changed')
  onProvisioned(event: StoredEvent<'computer.status_changed'>): void {
    if (event.data.provider === LOCAL_PROVIDER && event.data.to === ComputerStatus.Active && event.data.from !== ComputerStatus.Active) this.wake();
  }

  /** Starts, replaces and stops agents to match the computers that need one. */
  private async reconcile(): Promise<void> {
    const url = this.serverUrl();
    if (this.stopping || !url) return;
    try {
      await this.locks?.check();
      const rows = await this.repository.localAgents();
      // Every instance ranks the same rows the same way, so an organization's oldest computers are the ones
      // that get agents, however many instances share the work (creation refuses more; this holds when the quota was lowered).
      const limit = this.config.LOCAL_AGENTS_PER_ORGANIZATION;
      const over = rows.filter((row) => row.place > limit);
      for (const row of over) {
        if (this.overQuota.has(row.id)) continue;
        this.overQuota.add(row.id);
        this.logger.warn(
          `The agent of computer ${row.id} does not start: its organization has ${limit} local computers with agents (LOCAL_AGENTS_PER_ORGANIZATION)`,
        );
        logSecurityEvent('quota.exceeded', { organizationId: row.organizationId }, { quota: 'LOCAL_AGENTS_PER_ORGANIZATION', limit, computerId: row.id });
      }
      for (const computerId of this.overQuota) if (!over.some((row) => row.id === computerId)) this.overQuota.delete(computerId);
      // A computer provisioned on another host (COMPUTERS_DIR not shared) is that host's to run.
      const wanted = new Map(
        rows
          .filter((row) => row.place <= limit && this.launcher.isHere(row.id))
          .map((row) => [row.id, { envelope: row.agentTokenEncrypted, organizationId: row.organizationId }]),
      );
      this.launcher.forgetAllBut(new Set(wanted.keys()));
      for (const computerId of this.agents.computerIds()) {
        const want = wanted.get(computerId);
        if (want === undefined) {
          // Deleted (through another instance), or its workspace is gone.
          await this.retire(computerId, 'SIGKILL');
        } else if (want.envelope !== this.agents.versionOf(computerId)) {
          this.logger.log(`The token of computer ${computerId} was rotated: restarting its agent with the new one`);
          await this.retire(computerId, 'SIGTERM', { keepLock: true });
          if (!(await this.launch(computerId, want.organizationId, want.envelope))) await this.unlock(computerId);
        }
      }
      for (const [computerId, { envelope, organizationId }] of wanted) {
        if (this.stopping) return;
        if (this.agents.has(computerId)) continue;
        if (this.locks && !(await this.locks.tryLock(AdvisoryLock.LocalAgent, computerId))) continue;
        if (!(await this.launch(computerId, organizationId, envelope))) await this.unlock(computerId);
      }
    } catch (error) {
      this.logger.error(`Could not look at the local computers' agents: ${(error as Error).message}`);
    }
  }

  /** Starts supervising the computer's agent (its lock is held); false when its token cannot be read or its sandbox cannot start. */
  private async launch(computerId: string, organizationId: string, envelope: string): Promise<boolean> {
    const token = await this.launcher.tokenFor(computerId, envelope);
    if (token === null) return false;
    await this.agents.start({ computerId, organizationId, token, version: envelope });
    return true;
  }

  /** Stops the computer's agent (SIGTERM: SIGKILL after a grace period), and lets its lock go unless `keepLock`. */
  private async retire(computerId: string, signal: 'SIGTERM' | 'SIGKILL', options: { keepLock?: boolean } = {}): Promise<void> {
    if (!(await this.agents.retire(computerId, signal))) return;
    if (!options.keepLock) await this.unlock(computerId);
  }

  private async retireAll(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    await Promise.all(this.agents.computerIds().map((computerId) => this.retire(computerId, signal)));
  }

  private async unlock(computerId: string): Promise<void> {
    await this.locks?.unlock(AdvisoryLock.LocalAgent, computerId).catch(() => undefined);
  }

  /** The connection holding the locks is gone, and the locks with it: another instance may start these agents now. */
  private locksLost(error: Error): void {
    if (this.stopping) return;
    this.logger.error(
      `Lost the database connection that holds the local agents' locks (${error.message}): stopping this instance's agents; they start again once it is back`,
    );
    void this.exclusive(() => this.retireAll('SIGTERM'));
  }

  private exclusive(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(work).catch((error: Error) => this.logger.error(`Local agents: ${error.message}`));
    this.queue = next;
    return next;
  }

  /** This server's own address as its agents reach it (loopback when it listens on every interface); null until it listens. */
  private serverUrl(): string | null {
    const address = (this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined)?.address();
    if (!address || typeof address === 'string') return null;
    const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }
}
