import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { Role, UserKind } from '../../src/modules/auth';
import { repositoryId } from '../../src/modules/readiness/domain/repository-id';
import { SessionRetentionJob } from '../../src/modules/sessions/jobs/session-retention.job';
import { Sql } from '../../src/platform/database/sql';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { reportAt } from '../utils/fixtures/readiness';
import { startTestApp, TestApp } from '../utils/test-app';
import { expectStatus } from '../utils/v0-errors';

/**
 * Every list a client pages through is served by an index in the list's order, whatever the table's size: each named
 * statement, exactly as the app sent it during a tour of the API (every filter and the cursor's shape), is planned
 * with sequential scans and sorts priced out, as a large table would have them priced, and must read the expected
 * index and sort nothing. A list with no index of its own fails here, not in production.
 */
const EXPECTED_INDEX: Record<string, string | string[]> = {
  // The archive filter (e: exclude, the default; i: include; o: only) and a tag (t) filter rows of the same index.
  'sessions.list.e': 'sessions_organization_created_idx',
  'sessions.list.ek': 'sessions_organization_created_idx',
  'sessions.list.i': 'sessions_organization_created_idx',
  'sessions.list.ot': 'sessions_organization_created_idx',
  'sessions.list.oe': 'sessions_owner_created_idx',
  'sessions.list.ce': 'sessions_computer_created_idx',
  // Retention finds idle sessions through the creation index (updated_at has none, so a message's update stays HOT).
  'sessions.deleteInactive': 'sessions_organization_created_idx',
  'messages.list': 'messages_session_seq_key',
  'messages.list.newest': 'messages_session_seq_key',
  'messages.list.role': 'messages_session_role_seq_idx',
  'events.read.': 'events_seq',
  'events.read.s': 'events_session',
  'events.read.a.newest': 'events_actor_user',
  'events.read.ba.newest': 'events_actor_user',
  'readiness.list': 'readiness_reports_organization_created_idx',
  'readiness.list.after': 'readiness_reports_organization_created_idx',
  'readiness.list.repo': 'readiness_reports_repository_created_idx',
  'readiness.list.repo.after': 'readiness_reports_repository_created_idx',
  'auth.members.list': 'users_organization_created_idx',
  'auth.members.list.after': 'users_organization_created_idx',
  'auth.members.list.kind': 'users_organization_created_idx',
  'auth.apiKeys.list': 'api_keys_organization_created_idx',
  'auth.apiKeys.list.after': 'api_keys_organization_created_idx',
  // Both indexes give this order; on a handful of rows the planner may take either.
  'auth.apiKeys.list.user': ['api_keys_user_created_idx', 'api_keys_organization_created_idx'],
  'auth.apiKeys.list.user.after': ['api_keys_user_created_idx', 'api_keys_organization_created_idx'],
  'webhooks.list': 'webhooks_organization',
  'webhooks.list.after': 'webhooks_organization',
  'webhooks.deliveries.list': 'webhook_deliveries_list',
  'webhooks.deliveries.list.status': 'webhook_deliveries_list',
  'workerPools.list': 'worker_pools_organization_created_idx',
  'workerPools.list.after': 'worker_pools_organization_created_idx',
  'workerPools.tokens.list': 'worker_enrollment_tokens_pool_created_idx',
  'workerPools.tokens.list.after': 'worker_enrollment_tokens_pool_created_idx',
  'workers.list': 'workers_pool_registered_idx',
  'workers.list.after': 'workers_pool_registered_idx',
};

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describe('Statement plans: every paged list reads its index, in order', () => {
  let t: TestApp;
  const sent = new Map<string, { text: string; values: unknown[] }>();

  beforeAll(async () => {
    t = await startTestApp();
    // Seen, not replaced: each statement still runs as it always does.
    const sql = t.app.get(Sql);
    const query = sql.query.bind(sql);
    jest.spyOn(sql, 'query').mockImplementation((name, text, values) => {
      sent.set(name, { text, values });
      return query(name, text, values);
    });
    await tour();
  });

  afterAll(() => t.close());

  /** The plan PostgreSQL makes for a statement when scanning a whole table or sorting it is as dear as on a large one. */
  async function planOf(statement: { text: string; values: unknown[] }): Promise<PlanNode[]> {
    return t.app.get(DataSource).transaction(async (manager) => {
      await manager.query('SET LOCAL enable_seqscan = off');
      await manager.query('SET LOCAL enable_sort = off');
      const [row] = (await manager.query(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.values)) as Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>;
      return nodesOf(row['QUERY PLAN'][0].Plan);
    });
  }

  /** Every page of a list, following its cursor, so both the first page's statement and the next pages' run. */
  async function everyPage(user: TestUser, path: string, query: Record<string, string> = {}): Promise<void> {
    let cursor: string | null = null;
    do {
      const res: Response = await t
        .http()
        .get(path)
        .query({ ...query, limit: '1', ...(cursor ? { cursor } : {}) })
        .set(user.auth);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      cursor = (res.body.pagination?.nextCursor as string | null | undefined) ?? null;
    } while (cursor);
  }

  async function tour(): Promise<void> {
    // Message history on: listing a session's messages needs it.
    const org = await createOrganization(t, { messageHistory: true });
    const owner = await createUser(t, Role.Owner, org);
    const member = await createUser(t, Role.Member, org);
    // A guest lists only their own sessions.
    const guest = await createUser(t, Role.Guest, org);
    await createUser(t, Role.Member, org, undefined, UserKind.ServiceAccount);
    const http = () => t.http();

    const computer = await http()
      .post('/api/v0/computers')
      .set(owner.auth)
      .send({ name: `c-${randomUUID().slice(0, 6)}`, provider: 'byom', hostId: randomUUID(), remoteUser: 'dev' });
    expectStatus(computer, 201);
    const sessions: string[] = [];
    for (const user of [owner, owner, member]) {
      const res = await http().post('/api/v0/sessions').set(user.auth).send({});
      expectStatus(res, 201);
      sessions.push(res.body.sessionId as string);
      expectStatus(await http().post(`/api/v0/sessions/${res.body.sessionId}/messages`).set(user.auth).send({ text: 'hello' }), 200);
    }
    await everyPage(owner, '/api/v0/sessions');
    await everyPage(guest, '/api/v0/sessions');
    await everyPage(owner, '/api/v0/sessions', { computerId: computer.body.id as string });
    await everyPage(owner, '/api/v0/sessions', { archived: 'include' });
    await everyPage(owner, '/api/v0/sessions', { archived: 'only', tag: 'release' });
    await everyPage(owner, `/api/v0/sessions/${sessions[0]}/messages`);
    await everyPage(owner, `/api/v0/sessions/${sessions[0]}/messages`, { order: 'newest' });
    await everyPage(owner, `/api/v0/sessions/${sessions[0]}/messages`, { role: 'user' });
    await everyPage(owner, '/api/v0/events');
    await everyPage(owner, `/api/v0/sessions/${sessions[0]}/events`);
    await everyPage(owner, '/api/v0/organization/audit-log', { actorUserId: owner.userId });

    for (const repoUrl of ['https://github.com/acme/one', 'https://github.com/acme/one', 'https://github.com/acme/two']) {
      const res = await http()
        .post('/api/organization/maturity-level-reports')
        .set(owner.auth)
        .send({ repoUrl, apps: { '.': { description: 'root' } }, report: reportAt(2) });
      expectStatus(res, 201);
    }
    for (const query of [{}, { repoId: repositoryId('https://github.com/acme/one') }]) {
      let startAfter: string | undefined;
      for (;;) {
        const res = await http()
          .get('/api/organization/maturity-level-reports')
          .query({ ...query, limit: 1, ...(startAfter ? { startAfter } : {}) })
          .set(owner.auth);
        expectStatus(res, 200);
        const reports = res.body.reports as Array<{ reportId?: string; id?: string }>;
        if (reports.length === 0) break;
        startAfter = reports[reports.length - 1].reportId ?? reports[reports.length - 1].id;
      }
    }

    await everyPage(owner, '/api/v0/organization/members');
    await everyPage(owner, '/api/v0/organization/members', { kind: UserKind.ServiceAccount });
    expectStatus(await http().post('/settings/api-keys').set(owner.auth).set('accept', 'application/json').send({ name: 'second' }), 201);
    await everyPage(owner, '/settings/api-keys');
    await everyPage(owner, '/settings/api-keys', { scope: 'organization' });

    const webhooks: string[] = [];
    for (const path of ['/a', '/b']) {
      const res = await http()
        .post('/api/v0/organization/webhooks')
        .set(owner.auth)
        .send({ url: `https://hooks.example.com${path}` });
      expectStatus(res, 201);
      webhooks.push(res.body.id as string);
    }
    await everyPage(owner, '/api/v0/organization/webhooks');
    const webhook = { id: webhooks[0] };
    await everyPage(owner, `/api/v0/organization/webhooks/${webhook.id}/deliveries`);
    await everyPage(owner, `/api/v0/organization/webhooks/${webhook.id}/deliveries`, { status: 'pending' });

    const pools: string[] = [];
    for (const name of ['pool-a', 'pool-b']) {
      const res = await http().post('/api/v0/worker-pools').set(owner.auth).send({ name });
      expectStatus(res, 201);
      pools.push(res.body.id as string);
    }
    await everyPage(owner, '/api/v0/worker-pools');
    const enrollment: string[] = [];
    for (const name of ['rack-1', 'rack-2']) {
      const res = await http().post(`/api/v0/worker-pools/${pools[0]}/enrollment-tokens`).set(owner.auth).send({ name });
      expectStatus(res, 201);
      enrollment.push(res.body.token as string);
    }
    await everyPage(owner, `/api/v0/worker-pools/${pools[0]}/enrollment-tokens`);
    for (const token of enrollment) {
      const res = await http()
        .post('/api/v0/worker/register')
        .set('Authorization', `Bearer ${token}`)
        .send({ name: 'w', hostname: 'w.example', capacity: { computers: 1, cpus: 1, memoryMb: 1024, diskMb: 1024 }, sandboxed: true, version: '0.1.0' });
      expectStatus(res, 201);
    }
    await everyPage(owner, `/api/v0/worker-pools/${pools[0]}/workers`);

    // A retention makes the sweep look for idle sessions (awaited here, rather than at its next tick).
    expectStatus(
      await http()
        .patch('/api/v0/organization/enterprise-controls')
        .set(owner.auth)
        .send({ settings: { sessionRetentionDays: 30 } }),
      200,
    );
    await t.app.get(SessionRetentionJob).sweep();
  }

  it('the tour of the API sends every list statement named here', () => {
    expect(Object.keys(EXPECTED_INDEX).filter((name) => !sent.has(name))).toEqual([]);
  });

  it.each(Object.entries(EXPECTED_INDEX))('%s reads %s and sorts nothing', async (name, indexes) => {
    const statement = sent.get(name);
    if (!statement) throw new Error(`${name} was not sent by the tour`);
    const nodes = await planOf(statement);
    const shown = nodes.map((node) => `${node['Node Type']}${node['Index Name'] ? ` ${node['Index Name']}` : ''}`);
    expect({ name, plan: shown.filter((node) => /Sort|Seq Scan/.test(node)) }).toEqual({ name, plan: [] });
    expect(shown).toContainEqual(expect.stringMatching(new RegExp(`^Index (Only )?Scan (${[indexes].flat().join('|')})$`)));
  });
});
