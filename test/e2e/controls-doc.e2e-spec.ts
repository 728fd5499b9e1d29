import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Role } from '../../src/modules/auth';
import { createOrganization, createUser, TestUser } from '../utils/factories';
import { startTestApp, TestApp } from '../utils/test-app';

type Json = Record<string, unknown>;
type Schema = Json;

const ROOT = join(__dirname, '..', '..');
const CONTROLS = '/api/v0/organization/enterprise-controls';
const ACTS_IN = ['server', 'agent', 'both', 'none'];
/** Stands for a user of the organization in samples; replaced by the owner's id before sending. */
const USER_ID = '0192f0c8-0000-7000-8000-000000000000';
const NO_EFFECT_PROOF = '`test/e2e/controls-doc.e2e-spec.ts` › every setting without effect warns';

interface Row {
  field: string;
  actsIn: string;
  proof: string;
}

/** The rows of the table under `## <heading>` in docs/controls.md. */
function tableUnder(markdown: string, heading: string): Row[] {
  const section = markdown.split(/^## /m).find((part) => part.startsWith(`${heading}\n`));
  if (!section) throw new Error(`docs/controls.md has no "## ${heading}" section`);
  return section
    .split('\n')
    .filter((line) => /^\| `/.test(line))
    .map((line) => {
      const cells = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      return { field: cells[0].replace(/^`|`$/g, ''), actsIn: cells[2], proof: cells[3] };
    });
}

/** The leaf fields of a published schema: dotted paths, `[]` for list items; a field's `x-no-effect` reason when marked. */
function leaves(schemas: Record<string, Schema>, schema: Schema, prefix = ''): Array<{ path: string; noEffect?: string }> {
  const resolved = deref(schemas, schema);
  const properties = resolved.properties as Record<string, Schema> | undefined;
  if (resolved.type === 'object' && properties && Object.keys(properties).length > 0) {
    return Object.entries(properties).flatMap(([name, child]) => leaves(schemas, child, prefix ? `${prefix}.${name}` : name));
  }
  const items = resolved.type === 'array' ? deref(schemas, (resolved.items as Schema | undefined) ?? {}) : undefined;
  if (items?.properties) return leaves(schemas, items, `${prefix}[]`);
  // A list of objects of several shapes (mcpServers) is one field: its items.
  if (items?.oneOf) prefix = `${prefix}[]`;
  return [{ path: prefix, ...(typeof resolved['x-no-effect'] === 'string' ? { noEffect: resolved['x-no-effect'] } : {}) }];
}

function deref(schemas: Record<string, Schema>, schema: Schema): Schema {
  return typeof schema.$ref === 'string' ? schemas[schema.$ref.split('/').pop()!] : schema;
}

/** A value the schema accepts that asks for something: true, a first enum value, one list item, one map entry. */
function sample(schemas: Record<string, Schema>, schema: Schema, name = 'sample'): unknown {
  const s = deref(schemas, schema);
  if (Array.isArray(s.examples)) return s.examples[0];
  if (Array.isArray(s.enum)) return s.enum.find((value) => value !== null);
  if (Array.isArray(s.oneOf)) return sample(schemas, s.oneOf[0] as Schema, name);
  switch (s.type) {
    case 'boolean':
      return true;
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' ? s.minimum : 1;
    case 'array':
      return [sample(schemas, (s.items as Schema) ?? {}, name)];
    case 'object': {
      if (s.additionalProperties && typeof s.additionalProperties === 'object') return { [name]: sample(schemas, s.additionalProperties as Schema) };
      const properties = (s.properties ?? {}) as Record<string, Schema>;
      return Object.fromEntries(((s.required ?? []) as string[]).map((key) => [key, sample(schemas, properties[key], key)]));
    }
    default:
      if (s.format === 'http-base-url' || s.format === 'uri') return 'https://llm.example.com/v1';
      if (s.format === 'date-time') return '2026-11-29T08:00:00.000Z';
      if (s.format === 'lowercase-uuid') return USER_ID;
      return `${name}-1`;
  }
}

/** A settings object that sets the leaf `path` (and, around it, what its lists' items require) to a sample value. */
function setting(schemas: Record<string, Schema>, root: Schema, path: string): Json {
  const [head, ...rest] = path.split('.');
  const name = head.replace(/\[\]$/, '');
  const property = deref(schemas, (deref(schemas, root).properties as Record<string, Schema>)[name]);
  if (head.endsWith('[]')) {
    const item = deref(schemas, property.items as Schema);
    return { [name]: [{ ...(sample(schemas, item) as Json), ...(rest.length > 0 ? setting(schemas, item, rest.join('.')) : {}) }] };
  }
  return { [name]: rest.length > 0 ? setting(schemas, property, rest.join('.')) : sample(schemas, property, name) };
}

/** Two settings objects as one: objects merge member by member, lists item by item. */
function merged(a: unknown, b: unknown): Json {
  if (Array.isArray(a) && Array.isArray(b)) return a.map((item, i) => (i < b.length ? merged(item, b[i]) : item)) as unknown as Json;
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return b as Json;
  const out: Json = { ...(a as Json) };
  for (const [key, value] of Object.entries(b as Json)) out[key] = key in out ? merged(out[key], value) : value;
  return out;
}

/**
 * docs/controls.md says, for every leaf field of the published enterprise and session settings, what it does,
 * where it acts and which test proves it. This holds it true against the schemas the server publishes and the
 * tests in the tree, and holds every setting marked without effect to its warnings.
 */
describe('docs/controls.md', () => {
  let t: TestApp;
  let schemas: Record<string, Schema>;
  let owner: TestUser;
  const markdown = readFileSync(join(ROOT, 'docs/controls.md'), 'utf8');
  const tables = { EnterpriseSettings: tableUnder(markdown, 'Enterprise settings'), SessionSettings: tableUnder(markdown, 'Session settings') };

  beforeAll(async () => {
    t = await startTestApp();
    schemas = ((await t.http().get('/docs-json').expect(200)).body as { components: { schemas: Record<string, Schema> } }).components.schemas;
    owner = await createUser(t, Role.Owner, await createOrganization(t));
  });
  afterAll(() => t.close());

  it.each(Object.keys(tables) as Array<keyof typeof tables>)('has one row for each leaf field of the published %s, and no other', (name) => {
    const fields = leaves(schemas, schemas[name]).map((leaf) => leaf.path);
    const rows = tables[name].map((row) => row.field);
    expect({ missing: fields.filter((field) => !rows.includes(field)), unknown: rows.filter((row) => !fields.includes(row)) }).toEqual({
      missing: [],
      unknown: [],
    });
    expect(rows.filter((row, i) => rows.indexOf(row) !== i)).toEqual([]);
  });

  it('names, on every row, where the setting acts and a test that exists: the file, and a test whose title holds the words quoted', () => {
    const problems: string[] = [];
    for (const row of Object.values(tables).flat()) {
      if (!ACTS_IN.includes(row.actsIn)) problems.push(`${row.field}: "Acts in" is ${row.actsIn}`);
      for (const proof of row.proof.split('; ')) {
        const match = /^`([^`]+)` › (.{15,})$/.exec(proof);
        if (!match) {
          problems.push(`${row.field}: "${proof}" is not \`file\` › title words`);
          continue;
        }
        const [, file, words] = match;
        if (!existsSync(join(ROOT, file))) {
          problems.push(`${row.field}: ${file} does not exist`);
          continue;
        }
        // The words must be in a title: on the line of an it(...)/describe(...) call, or on the line after one.
        const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
        const titled = lines.some(
          (line, i) => line.includes(words) && [line, lines[i - 1] ?? ''].some((l) => /\b(it|itInSandbox|test|describe)(\.each\([^)]*\))?\(/.test(l)),
        );
        if (!titled) problems.push(`${row.field}: no test title in ${file} holds "${words}"`);
      }
    }
    expect(problems).toEqual([]);
  });

  it.each(Object.keys(tables) as Array<keyof typeof tables>)('says "none" of exactly the fields the published %s marks x-no-effect', (name) => {
    const marked = leaves(schemas, schemas[name])
      .filter((leaf) => leaf.noEffect !== undefined)
      .map((leaf) => leaf.path);
    const none = tables[name].filter((row) => row.actsIn === 'none');
    expect(none.map((row) => row.field)).toEqual(marked);
    for (const row of none) expect({ field: row.field, proof: row.proof }).toEqual({ field: row.field, proof: NO_EFFECT_PROOF });
  });

  it('every setting without effect warns: on the change that sets it, in the agent policy, and on a session that sets it', async () => {
    const settings = schemas.EnterpriseSettings;
    const noEffect = leaves(schemas, settings).filter((leaf) => leaf.noEffect !== undefined);
    expect(noEffect.length).toBeGreaterThan(0);
    for (const { path, noEffect: reason } of noEffect) {
      const patch = JSON.parse(JSON.stringify(setting(schemas, settings, path)).replaceAll(USER_ID, owner.userId)) as Json;
      const res = await t.http().patch(CONTROLS).set(owner.auth).send({ settings: patch });
      expect({ path, status: res.status, warnings: res.body.warnings }).toEqual({
        path,
        status: 200,
        warnings: expect.arrayContaining([{ code: 'setting_has_no_effect', field: path, message: `${path} has no effect on this server: ${reason}` }]),
      });
    }
    // A setting that acts draws no warning.
    const acting = await t
      .http()
      .patch(CONTROLS)
      .set(owner.auth)
      .send({ settings: { restrictMemberVisibility: true, commandBlocklist: ['rm -rf /'] } });
    expect(acting.status).toBe(200);
    expect(acting.body).not.toHaveProperty('warnings');

    // All at once: the answer names each, and the agent policy names those of its own settings.
    const all = noEffect.map(({ path }) => setting(schemas, settings, path)).reduce(merged);
    const together = await t
      .http()
      .patch(CONTROLS)
      .set(owner.auth)
      .send({ settings: JSON.parse(JSON.stringify(all).replaceAll(USER_ID, owner.userId)) as Json })
      .expect(200);
    expect((together.body.warnings as Array<{ field: string }>).map((warning) => warning.field)).toEqual(noEffect.map((leaf) => leaf.path));
    const policy = (await t.http().get('/api/v0/agent/policy').set(owner.auth).expect(200)).body as { warnings: Array<{ field: string }> } & Json;
    const inPolicy = noEffect.map((leaf) => leaf.path).filter((path) => path.split(/[.[]/)[0] in policy);
    expect(policy.warnings.map((warning) => warning.field).sort()).toEqual([...inPolicy].sort());

    const sessionNoEffect = leaves(schemas, schemas.SessionSettings).filter((leaf) => leaf.noEffect !== undefined);
    for (const { path } of sessionNoEffect) {
      const sessionSettings = setting(schemas, schemas.SessionSettings, path);
      const created = await t.http().post('/api/v0/sessions').set(owner.auth).send({ sessionSettings }).expect(201);
      const updated = await t.http().patch(`/api/v0/sessions/${created.body.sessionId}`).set(owner.auth).send({ sessionSettings }).expect(200);
      for (const res of [created, updated]) {
        expect({ path, warnings: res.body.warnings }).toEqual({ path, warnings: [expect.objectContaining({ code: 'setting_has_no_effect', field: path })] });
      }
      const read = await t.http().get(`/api/v0/sessions/${created.body.sessionId}`).set(owner.auth).expect(200);
      expect(read.body).not.toHaveProperty('warnings');
    }
  });
});
