import { EventEmitter2 } from '@nestjs/event-emitter';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { Role } from '../../src/modules/auth';
import type { StoredEvent } from '../../src/platform/events';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { api, Body, onServerDisk, sleep, until } from '../utils/polling';
import { createGitRepo, npmProject, reposRoot } from '../utils/git-fixtures';
import { startServer } from '../utils/processes';
import { startTestApp, TestApp } from '../utils/test-app';
import { createTestDatabase, serverUrl, TestDatabase } from '../utils/test-database';

/** A node one-liner for a postinstall script: waits `ms`, then writes `file`. */
const sleepThenWrite = (ms: number, file: string) => `node -e "setTimeout(() => require('fs').writeFileSync('${file}', 'x'), ${ms})"`;

/** The host pid of the live process whose command line holds `text` (a sandboxed process knows only its pid inside). */
function hostPidOf(text: string): number | undefined {
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text) && isAlive(Number(entry))) return Number(entry);
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}

/** Whether a process runs (a zombie, killed but not yet reaped, does not). */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Each failed step's error, so that a failure says why in its diff. */
const stepErrors = (computer: Body): string[] => (computer.provisioningSteps as Body[]).filter((s) => s.error).map((s) => `${s.id}: ${s.error}`);

/** The provisioning log's lines that say a step started. */
async function stepStarts(base: string, user: TestUser, sessionId: string): Promise<string[]> {
  const res = await api(base, user, 'GET', `/api/v0/sessions/${sessionId}/messages?limit=100`);
  return (res.body.messages as Body[])
    .map((m) => m.content[0].text as string)
    .filter((text) => / started on /.test(text))
    .map((text) => /^Step (\S+)/.exec(text)![1]);
}

describe('Provisioning', () => {
  let root: string;

  beforeAll(async () => {
    root = await reposRoot();
  });

  describe('on one instance', () => {
    let t: TestApp;
    let owner: TestUser;
    let base: string;
    const events: Array<StoredEvent<'computer.status_changed'>> = [];

    beforeAll(async () => {
      // The default poll interval: a new computer's first step is claimed at once (the instance wakes), not at the next tick.
      // The step timeout leaves a small npm install (about 1.2 s in a loaded CI) room to finish; the hanging step outlasts it.
      t = await startTestApp({ LOCAL_REPOS_DIR: root, LOCAL_INSTALL_SCRIPTS: 'true', PROVISIONING_LEASE_MS: '900', PROVISIONING_STEP_TIMEOUT_MS: '3500' });
      owner = await createUser(t, Role.Owner, await createOrganization(t, { messageHistory: true }));
      base = await t.app.getUrl();
      const emitter = t.app.get(EventEmitter2);
      emitter.on('computer.status_changed', (event: StoredEvent<'computer.status_changed'>) => events.push(event));
    });

    afterAll(() => t.close());

    it('a managed computer with one small repo becomes active, and says so in an event', async () => {
      const repo = await createGitRepo(root, 'small', npmProject('small'));
      const started = Date.now();
      const created = await api(base, owner, 'POST', '/api/v0/computers', { name: 'small', provider: 'local', repos: [repo], autoInstallDeps: true });
      expect(created.status).toBe(201);
      const active = await until(
        () => api(base, owner, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => r.body.status !== 'provisioning',
        'active',
      );
      const elapsed = Date.now() - started;
      expect({ status: active.body.status, errors: stepErrors(active.body) }).toEqual({ status: 'active', errors: [] });
      const steps = (active.body.provisioningSteps as Body[]).map((s) => `${s.id} ${s.completedAt - s.startedAt} ms`).join(', ');
      console.log(`A managed computer with one small repo (npm ci) became active in ${elapsed} ms (${steps})`);
      for (const step of active.body.provisioningSteps as Body[]) {
        expect(step.startedAt).toBeLessThanOrEqual(step.completedAt);
        expect(step.completedAt).toBeGreaterThanOrEqual(active.body.createdAt);
      }
      const changed = (list: typeof events) => list.find((e) => e.data.computerId === created.body.id && e.data.to !== e.data.from);
      await until(
        async () => events,
        (list) => changed(list) !== undefined,
        'the provisioned event',
      );
      expect(changed(events)).toMatchObject({ organizationId: owner.organizationId, data: { from: 'provisioning', to: 'active', provider: 'local' } });
    });

    it('install output PostgreSQL cannot store (a NUL byte) is recorded with a replacement character', async () => {
      const repo = await createGitRepo(root, 'nul-output', npmProject('nul-output', 'node -e "process.stdout.write(String.fromCharCode(97, 0, 98))"'));
      const created = await api(base, owner, 'POST', '/api/v0/computers', { name: 'nul', provider: 'local', repos: [repo], autoInstallDeps: true });
      const done = await until(
        () => api(base, owner, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => r.body.status !== 'provisioning',
        'active',
      );
      expect({ status: done.body.status, errors: stepErrors(done.body) }).toEqual({ status: 'active', errors: [] });
      const log = await api(base, owner, 'GET', `/api/v0/sessions/${done.body.provisioningSteps[0].installSessionId}/messages?limit=100`);
      expect((log.body.messages as Body[]).some((m) => (m.content[0].text as string).includes('a\uFFFDb'))).toBe(true);
    });

    it('a step that hangs is stopped at the timeout: failed, its processes killed, a failed event', async () => {
      const repo = await createGitRepo(root, 'hangs', npmProject('hangs', sleepThenWrite(7_000, 'late.txt')));
      const created = await api(base, owner, 'POST', '/api/v0/computers', { name: 'hangs', provider: 'local', repos: [repo], autoInstallDeps: true });
      const failed = await until(
        () => api(base, owner, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => r.body.status !== 'provisioning',
        'error',
      );
      expect(failed.body.status).toBe('error');
      const install = (failed.body.provisioningSteps as Body[]).find((s) => s.id === 'install-dependencies')!;
      expect(install).toMatchObject({ status: 'failed', error: expect.stringMatching(/^Timed out/) });
      await sleep(4_000);
      expect(existsSync(join(onServerDisk(failed.body.clonedRepoDirectories[0], t.config.computersDir), 'late.txt'))).toBe(false);
      const event = events.find((e) => e.data.computerId === created.body.id && e.data.to === 'error');
      expect(event).toMatchObject({ data: { from: 'provisioning', step: { stepId: 'install-dependencies', status: 'failed' } } });
    });

    it('a step whose claims keep lapsing (its instances keep dying) fails as abandoned after 3 claims', async () => {
      const repo = await createGitRepo(root, 'abandoned', npmProject('abandoned', sleepThenWrite(1_200, 'late.txt')));
      const created = await api(base, owner, 'POST', '/api/v0/computers', { name: 'abandoned', provider: 'local', repos: [repo], autoInstallDeps: true });
      await until(
        () => api(base, owner, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => (r.body.provisioningSteps as Body[]).some((s) => s.id === 'install-dependencies' && s.status === 'running'),
        'the install step to run',
      );
      // As if two more instances had claimed the step and died: a third claim, lapsed, held by nobody alive.
      await t.app.get(DataSource).query(
        `UPDATE provisioning_steps SET attempts = 3, claim_id = gen_random_uuid(), lease_expires_at = now() - interval '1 second'
         WHERE computer_id = $1 AND status = 'running'`,
        [created.body.id],
      );
      const failed = await until(
        () => api(base, owner, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => r.body.status !== 'provisioning',
        'error',
      );
      expect(failed.body.status).toBe('error');
      expect((failed.body.provisioningSteps as Body[])[2]).toMatchObject({
        id: 'install-dependencies',
        status: 'failed',
        error: expect.stringMatching(/^Abandoned: 3 /),
      });
    });

    it('deleting a computer mid-step stops the step and removes its workspace', async () => {
      const repo = await createGitRepo(root, 'slow-delete', npmProject('slow-delete', sleepThenWrite(1_200, 'late.txt')));
      const created = await api(base, owner, 'POST', '/api/v0/computers', { name: 'doomed', provider: 'local', repos: [repo], autoInstallDeps: true });
      await until(
        () => api(base, owner, 'GET', `/api/v0/computers/${created.body.id}`),
        (r) => (r.body.provisioningSteps as Body[]).some((s) => s.id === 'install-dependencies' && s.status === 'running'),
        'the install step to run',
      );
      expect((await api(base, owner, 'DELETE', `/api/v0/computers/${created.body.id}`)).status).toBe(204);
      await sleep(2_000);
      expect(existsSync(join(t.config.computersDir, created.body.id))).toBe(false);
      expect((await api(base, owner, 'GET', `/api/v0/computers/${created.body.id}`)).status).toBe(404);
    });
  });

  (serverUrl() ? describe : describe.skip)('on two instances sharing one PostgreSQL', () => {
    let database: TestDatabase;
    let a: TestApp;
    let b: TestApp;
    let owner: TestUser;

    beforeAll(async () => {
      database = await createTestDatabase();
      // All 8 computers may be provisioning at once (the per-organization quota is tested in computer-quotas).
      const env = { LOCAL_REPOS_DIR: root, PROVISIONING_POLL_MS: '50', PROVISIONING_CONCURRENCY: '2', PROVISIONING_PER_ORGANIZATION: '8' };
      a = await startTestApp(env, database);
      b = await startTestApp(env, database);
      owner = await createUser(a, Role.Owner, await createOrganization(a, { messageHistory: true }));
    });

    afterAll(async () => {
      await a.close();
      await b.close();
      await database.drop();
    });

    it('every step of every computer runs exactly once, shared between the instances', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const repo = await createGitRepo(root, `shared-${i}`, npmProject(`shared-${i}`));
        const base = await (i % 2 ? a : b).app.getUrl();
        const created = await api(base, owner, 'POST', '/api/v0/computers', { name: `c${i}`, provider: 'local', repos: [repo], autoInstallDeps: true });
        expect(created.status).toBe(201);
        ids.push(created.body.id);
      }
      const base = await a.app.getUrl();
      const computers = await until(
        () => api(base, owner, 'GET', '/api/v0/computers'),
        (r) => (r.body.computers as Body[]).every((c) => c.status !== 'provisioning'),
        'every computer to finish',
        120_000,
      );
      expect((computers.body.computers as Body[]).map((c) => c.status)).toEqual(ids.map(() => 'active'));
      const attempts = await a.app.get(DataSource).query(`SELECT attempts, count(*)::int AS n FROM provisioning_steps GROUP BY attempts`);
      expect(attempts).toEqual([{ attempts: 1, n: 24 }]);
      const instances = new Set<string>();
      for (const id of ids) {
        const full = await api(base, owner, 'GET', `/api/v0/computers/${id}`);
        const sessionId = full.body.provisioningSteps[0].installSessionId;
        expect(await stepStarts(base, owner, sessionId)).toEqual(['create-computer', 'clone-repos', 'install-dependencies']);
        const log = await api(base, owner, 'GET', `/api/v0/sessions/${sessionId}/messages?limit=100`);
        for (const m of log.body.messages as Body[]) {
          const match = / started on (\S+) /.exec(m.content[0].text);
          if (match) instances.add(match[1]);
        }
      }
      expect(instances.size).toBeGreaterThanOrEqual(1);
      console.log(`Steps were run by ${instances.size} instance(s): ${[...instances].join(', ')}`);
    });
  });

  describe('across a crash', () => {
    it.each([
      ['sandboxed: its install ends with it', 'on'],
      ['with LOCAL_SANDBOX=off: the next one stops the install the dead one left running', 'off'],
    ])('a server killed mid-step leaves the step to the next server, which runs it again and finishes (%s)', async (_case, sandbox) => {
      const database = await createTestDatabase();
      const env = {
        ...database.env,
        LOCAL_SANDBOX: sandbox,
        LOCAL_REPOS_DIR: root,
        LOCAL_INSTALL_SCRIPTS: 'true',
        PROVISIONING_POLL_MS: '100',
        PROVISIONING_LEASE_MS: '1000',
      };
      const setup = await startTestApp(env, database);
      const owner = await createUser(setup, Role.Owner, await createOrganization(setup, { messageHistory: true }));
      await setup.close();

      // The install's script records its pid in started.txt; the first run then sleeps a minute, a later one half a second.
      const script =
        `node -e "const fs = require('fs'); const first = !fs.existsSync('started.txt'); fs.appendFileSync('started.txt', process.pid + '\\n'); ` +
        `setTimeout(() => fs.appendFileSync('done.txt', 'done\\n'), first ? 60000 : 500)"`;
      const repo = await createGitRepo(root, `crash-${sandbox}`, npmProject('crash', script));
      const first = await startServer([], env);
      let second: Awaited<ReturnType<typeof startServer>> | undefined;
      let orphan: number | undefined;
      try {
        const created = await api(first.url, owner, 'POST', '/api/v0/computers', { name: 'crash', provider: 'local', repos: [repo], autoInstallDeps: true });
        expect(created.status).toBe(201);
        // Killed while the install's script runs.
        const cloned = await until(
          () => api(first.url, owner, 'GET', `/api/v0/computers/${created.body.id}`),
          (r) => (r.body.clonedRepoDirectories as string[]).length === 1,
          'the clone',
        );
        const dir = onServerDisk(cloned.body.clonedRepoDirectories[0] as string, join(database.dataDir, 'computers'));
        await until(
          async () => existsSync(join(dir, 'started.txt')),
          (started) => started,
          'the install script to start',
        );
        orphan = hostPidOf("appendFileSync('started.txt'");
        expect(orphan && isAlive(orphan)).toBe(true);
        first.child.kill('SIGKILL');
        await new Promise((resolve) => first.child.once('exit', resolve));
        if (sandbox === 'on') {
          // The sandbox dies with its server (bwrap --die-with-parent): nothing is left running.
          expect(
            await until(
              async () => isAlive(orphan!),
              (alive) => !alive,
              'the sandboxed install to end',
              5_000,
            ),
          ).toBe(false);
        } else {
          // Unsandboxed, killing the server alone leaves its install running in its own process group.
          expect(isAlive(orphan!)).toBe(true);
        }

        second = await startServer([], env);
        const done = await until(
          () => api(second!.url, owner, 'GET', `/api/v0/computers/${created.body.id}`),
          (r) => r.body.status !== 'provisioning',
          'the computer to finish',
        );
        // On failure, the steps (with their error) show in the diff.
        expect({ status: done.body.status, steps: done.body.provisioningSteps }).toMatchObject({ status: 'active' });
        const starts = await stepStarts(second.url, owner, done.body.provisioningSteps[0].installSessionId);
        expect(starts).toEqual(['create-computer', 'clone-repos', 'install-dependencies', 'install-dependencies']);
        // The server that took the step over stopped the dead one's install before running its own.
        expect(isAlive(orphan!)).toBe(false);
        expect(await readFile(join(dir, 'done.txt'), 'utf8')).toBe('done\n');
        const log = await api(second.url, owner, 'GET', `/api/v0/sessions/${done.body.provisioningSteps[0].installSessionId}/messages?limit=100`);
        const stopped = (log.body.messages as Body[]).some((m) => /^Stopped a command \(pid \d+\) left running/.test(m.content[0].text as string));
        // (Sandboxed, what is left of the dead one's sandbox may still be ending when the next one looks: either way.)
        if (sandbox === 'off') expect(stopped).toBe(true);
      } finally {
        if (first.child.exitCode === null) first.child.kill('SIGKILL');
        if (orphan !== undefined && isAlive(orphan)) process.kill(orphan, 'SIGKILL');
        await second?.stop();
        await database.drop();
      }
    });
  });
});
