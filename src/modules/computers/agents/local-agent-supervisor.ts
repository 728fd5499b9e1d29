import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ChildProcess } from 'node:child_process';
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
import { AGENT_MAIN, AGENT_MODEL_SETTINGS, LocalAgentLauncher, ORPHAN_GUARD } from './local-agent-launcher';

const JOB_NAME = 'computers.local-agents';

/** How often each instance compares the agents it runs with the computers that need one. */
const RECONCILE_MS = 5_000;
/** An agent that exits is started again after this long, doubling at each exit up to the maximum. */
const FIRST_RESTART_MS = 1_000;
const MAX_RESTART_MS = 60_000;
/** An agent asked to stop (SIGTERM) that still runs after this long is killed. */
const STOP_GRACE_MS = 5_000;

interface SupervisedAgent {
  computerId: string;
  organizationId: string;
  /** The stored envelope its token came from: another one means the token was rotated. */
  envelope: string;
  token: string;
  child: ChildProcess | null;
  /** Resolves when `child` has exited. */
  exited: Promise<void>;
  startedAt: number;
  restartDelayMs: number;
  restartTimer: NodeJS.Timeout | null;
  retired: boolean;
}

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
  private readonly agents = new Map<string, SupervisedAgent>();
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
  ) {}

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
      for (const agent of [...this.agents.values()]) {
        const envelope = wanted.get(agent.computerId)?.envelope;
        if (envelope === undefined) {
          // Deleted (through another instance), or its workspace is gone.
          await this.retire(agent.computerId, 'SIGKILL');
        } else if (envelope !== agent.envelope) {
          this.logger.log(`The token of computer ${agent.computerId} was rotated: restarting its agent with the new one`);
          await this.retire(agent.computerId, 'SIGTERM', { keepLock: true });
          if (!(await this.launch(agent.computerId, agent.organizationId, envelope))) await this.unlock(agent.computerId);
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
    const agent: SupervisedAgent = {
      computerId,
      organizationId,
      envelope,
      token,
      child: null,
      exited: Promise.resolve(),
      startedAt: 0,
      restartDelayMs: FIRST_RESTART_MS,
      restartTimer: null,
      retired: false,
    };
    this.agents.set(computerId, agent);
    await this.start(agent);
    return true;
  }

  /** Starts the agent's process and watches it end. */
  private async start(agent: SupervisedAgent): Promise<void> {
    const url = this.serverUrl();
    // Gone meanwhile: the next look retires the agent.
    if (!url) return;
    const { computerId, organizationId, token } = agent;
    const child = await this.launcher.spawn({ computerId, organizationId, token, url }, () => agent.retired || this.stopping);
    if (!child) return;
    agent.child = child;
    agent.startedAt = Date.now();
    agent.exited = new Promise((resolve) => {
      let settled = false;
      const settle = (outcome: string) => {
        if (settled) return;
        settled = true;
        resolve();
        this.onExit(agent, child, outcome);
      };
      child.once('exit', (code, signal) => settle(code !== null ? `exit ${code}` : `killed by ${signal}`));
      child.once('error', (error) => settle(`could not run: ${error.message}`));
    });
  }

  /** A child ended: unless it was stopped on purpose, it is started again after its backoff. */
  private onExit(agent: SupervisedAgent, child: ChildProcess, outcome: string): void {
    if (agent.child !== child) return;
    agent.child = null;
    if (agent.retired || this.stopping) {
      this.logger.log(`The agent of computer ${agent.computerId} stopped (${outcome})`);
      return;
    }
    // One that ran a good while had a reason of its own to stop: start again from the shortest wait.
    if (Date.now() - agent.startedAt >= MAX_RESTART_MS) agent.restartDelayMs = FIRST_RESTART_MS;
    const delay = agent.restartDelayMs;
    agent.restartDelayMs = Math.min(MAX_RESTART_MS, delay * 2);
    this.logger.warn(`The agent of computer ${agent.computerId} exited (${outcome}); starting it again in ${delay / 1000} s`);
    agent.restartTimer = setTimeout(() => {
      agent.restartTimer = null;
      if (agent.retired || this.stopping) return;
      this.start(agent).catch((error: Error) => this.logger.error(`The agent of computer ${agent.computerId} could not be started again: ${error.message}`));
    }, delay);
  }

  /** Stops supervising the computer's agent and stops its process (SIGTERM: SIGKILL after a grace period). */
  private async retire(computerId: string, signal: 'SIGTERM' | 'SIGKILL', options: { keepLock?: boolean } = {}): Promise<void> {
    const agent = this.agents.get(computerId);
    if (!agent) return;
    agent.retired = true;
    this.agents.delete(computerId);
    if (agent.restartTimer) clearTimeout(agent.restartTimer);
    const child = agent.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      killGroup(child, signal);
      const escalation = signal === 'SIGKILL' ? null : setTimeout(() => killGroup(child, 'SIGKILL'), STOP_GRACE_MS);
      await agent.exited;
      if (escalation) clearTimeout(escalation);
    }
    if (!options.keepLock) await this.unlock(computerId);
  }

  private async retireAll(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    await Promise.all([...this.agents.keys()].map((computerId) => this.retire(computerId, signal)));
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

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}
