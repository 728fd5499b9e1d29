import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config';
import { OpenDatabase, openDatabase } from '../../src/platform/database/open-database';
import { createTestDatabase, TestDatabase } from '../utils/test-database';

/**
 * The migrated schema can be sharded by organization (Citus distributes every tenant table by `organization_id`): read
 * from the catalog, not from the migrations, so a key added later without the organization fails here. Citus requires
 * that primary keys and unique indexes of a distributed table include its distribution column, and that foreign keys
 * between distributed tables join on it; leading with it also keeps one organization's rows together in each index.
 */

/** Tables without `organization_id`, and what each would be in Citus. */
const NOT_TENANT: Record<string, string> = {
  // The tenants themselves: a reference table (a copy on every node, so the tenant tables' keys to it stay local). Its
  // slug is unique and looked up before an organization is known, which distributing it by `id` would not allow.
  organizations: 'the tenants themselves',
  // Keyed by client, and an anonymous client has no organization: a table local to the coordinator (or distributed
  // by `key` on its own), never joined with tenant data.
  rate_limit_windows: 'rate limits of clients, some without an organization',
  // One row for the whole rollup: a reference table (or local to the coordinator).
  analytics_rollup_state: 'the rollup’s single state row',
  // TypeORM's bookkeeping: local to the coordinator, where migrations run.
  migrations: 'migrations applied',
};

/**
 * Unique indexes of tenant tables that leave `organization_id` out, because the lookup comes before the organization
 * is known. In Citus each would move to a lookup table distributed by the hash (hash → organization_id, id), written
 * with the row, while the tenant table keeps the hash unique per organization.
 */
const GLOBAL_UNIQUE: Record<string, string> = {
  // Every API request authenticates by the key's hash, which tells the organization.
  api_keys_key_hash_key: 'API keys are found by hash before the organization is known',
  // An agent's requests authenticate by its computer's token hash, likewise.
  computers_agent_token_hash_key: 'agent tokens are found by hash before the organization is known',
  // An MCP OAuth callback carries only its state, which tells the organization.
  // A worker registers with its pool's enrollment token alone, which tells the organization.
  worker_enrollment_tokens_token_hash_key: 'enrollment tokens are found by hash before the organization is known',
  // Each call of a registered worker presents its session token alone, likewise.
  workers_session_hash_key: 'worker session tokens are found by hash before the organization is known',
  mcp_oauth_connections_state_hash_key: 'an OAuth sign-in is found by its state before the organization is known',
};

interface Key {
  table: string;
  name: string;
  columns: string[];
}

interface ForeignKey extends Key {
  references: string;
  referencedColumns: string[];
}

describe('Keys led by the organization (sharding by organization)', () => {
  let database: TestDatabase;
  let opened: OpenDatabase;
  let db: DataSource;
  let tenant: Set<string>;

  beforeAll(async () => {
    database = await createTestDatabase();
    opened = await openDatabase(loadConfig(database.env), { migrate: false });
    db = opened.dataSource;
    const rows: Array<{ table: string; tenant: boolean }> = await db.query(`
      SELECT c.relname AS table,
             EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'organization_id' AND NOT a.attisdropped) AS tenant
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')`);
    tenant = new Set(rows.filter((row) => row.tenant).map((row) => row.table));
  });

  afterAll(async () => {
    await opened?.close();
    await database?.drop();
  });

  /** Column names of a key, in the key's order. */
  const COLUMNS = (rel: string, keys: string) => `
    ARRAY(SELECT a.attname::text FROM unnest(${keys}) WITH ORDINALITY k(attnum, i)
          JOIN pg_attribute a ON a.attrelid = ${rel} AND a.attnum = k.attnum ORDER BY k.i)`;

  async function constraints(type: 'p' | 'f'): Promise<ForeignKey[]> {
    return db.query(`
      SELECT c.conrelid::regclass::text AS table, c.conname AS name, ${COLUMNS('c.conrelid', 'c.conkey')} AS columns,
             c.confrelid::regclass::text AS references, ${COLUMNS('c.confrelid', 'c.confkey')} AS "referencedColumns"
      FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
      WHERE n.nspname = 'public' AND c.contype = '${type}'
      ORDER BY 1, 2`);
  }

  it('every table has organization_id but the allowed few', async () => {
    const rows: Array<{ tablename: string }> = await db.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`);
    const without = rows.map((row) => row.tablename).filter((table) => !tenant.has(table));
    expect(without.sort()).toEqual(Object.keys(NOT_TENANT).sort());
  });

  it('every tenant table’s primary key starts with organization_id', async () => {
    const keys = (await constraints('p')).filter((key) => tenant.has(key.table));
    expect(keys.map((key) => key.table).sort()).toEqual([...tenant].sort());
    const wrong = keys.filter((key) => key.columns[0] !== 'organization_id').map((key) => `${key.table} (${key.columns.join(', ')})`);
    expect(wrong).toEqual([]);
  });

  it('every foreign key between tenant tables joins on organization_id at the same place on both sides', async () => {
    const keys = (await constraints('f')).filter((key) => tenant.has(key.table) && tenant.has(key.references));
    const wrong = keys
      .filter((key) => {
        const at = key.columns.indexOf('organization_id');
        return at < 0 || key.referencedColumns[at] !== 'organization_id';
      })
      .map((key) => `${key.name}: ${key.table} (${key.columns.join(', ')}) → ${key.references} (${key.referencedColumns.join(', ')})`);
    expect(wrong).toEqual([]);
    // users ← api_keys, sessions, computers; sessions ← messages, tool_approvals, provisioning_steps; computers ← sessions (2),
    // provisioning_steps; webhooks ← webhook_deliveries.
    expect(keys.length).toBeGreaterThanOrEqual(10);
  });

  it('tenant tables refer to other tables only through organization_id → organizations(id), and nothing else refers to them', async () => {
    const keys = await constraints('f');
    const outward = keys
      .filter((key) => tenant.has(key.table) && !tenant.has(key.references))
      .filter((key) => !(key.references === 'organizations' && key.columns.join() === 'organization_id' && key.referencedColumns.join() === 'id'));
    expect(outward.map((key) => key.name)).toEqual([]);
    const inward = keys.filter((key) => !tenant.has(key.table) && tenant.has(key.references));
    expect(inward.map((key) => key.name)).toEqual([]);
  });

  it('every unique index of a tenant table includes organization_id, but the global lookups allowed', async () => {
    const indexes: Key[] = await db.query(`
      SELECT t.relname AS table, i.relname AS name, ${COLUMNS('x.indrelid', 'x.indkey::int2[]')} AS columns
      FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = 'public' AND x.indisunique
      ORDER BY 1, 2`);
    const global = indexes.filter((index) => tenant.has(index.table) && !index.columns.includes('organization_id'));
    expect(global.map((index) => index.name).sort()).toEqual(Object.keys(GLOBAL_UNIQUE).sort());
  });
});
