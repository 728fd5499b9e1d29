import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import * as ts from 'typescript';
import { loadConfig } from '../../src/config/app-config';
import { OpenDatabase, openDatabase } from '../../src/platform/database/open-database';
import { createTestDatabase, TestDatabase } from '../utils/test-database';

/**
 * A table belongs to one module (or one part of the platform), and only that owner's code names it (docs/architecture.md,
 * "Data access"). Read from the tree, not from a list: the tables from the migrated database's catalog, their owners
 * from the folder of the entity that maps each one, and the statements from every string and template literal of
 * src/ (so a fragment kept in a constant counts as much as the text handed to `query`).
 *
 * How code is judged, by where it sits:
 * - `src/modules/<m>/`: SQL (a literal naming a table or starting like a statement, or any `.query(` call) only in a
 *   `*.repository.ts` file, naming only module m's tables; TypeORM entities of m only.
 * - `src/platform/<part>/`: a part of the platform is a store of its own (the event log, idempotency keys, the rate
 *   limits' ledger...) with no repository file; SQL anywhere in the part, naming only the part's tables.
 * - anywhere else in src/ (the CLI, the demo, config...): no SQL at all; it goes through a module's providers.
 * - Left out: src/migrations (the schema's history, which creates every owner's tables: tenant-keys and the
 *   entity/migration check judge it), src/schema.ts (the list of every entity, for the data source),
 *   src/platform/database/snapshot.ts (backup and restore: every table, by the names the catalog gives, none written in
 *   its text) and unit specs.
 */

const ROOT = join(__dirname, '..', '..');
const SRC = join(ROOT, 'src');

/** Tables no entity maps (hand-written SQL only), and their owners: a new table without an entity is added here. */
const WITHOUT_ENTITY: Record<string, string> = {
  events: 'platform/events',
  event_sequences: 'platform/events',
  event_checkpoints: 'platform/events',
  webhooks: 'webhooks',
  webhook_deliveries: 'webhooks',
  // TypeORM's record of the migrations applied (`migrationsTableName` in open-database.ts).
  migrations: 'platform/database',
};

/** Who a file is: a module, a part of the platform, or some other area of src/ (which owns no table). */
function ownerOf(file: string): { owner: string; kind: 'module' | 'platform' | 'other' } {
  const [area, name] = relative(SRC, join(ROOT, file)).split(sep);
  if (area === 'modules') return { owner: name, kind: 'module' };
  if (area === 'platform') return { owner: `platform/${name}`, kind: 'platform' };
  return { owner: `src/${area.replace(/\.ts$/, '')}`, kind: 'other' };
}

/** Put around the source of an interpolated value whose text the file does not hold (`${table()}`). */
const UNKNOWN = '\u0000';
const UNKNOWN_END = '\u0001';

/**
 * Interpolations the test lets stand where a table's name goes, with why. EventLog.statementEvents writes a command's
 * events in the command's own statement, selecting from a name the command gives: a CTE of that statement (whose text,
 * tables and all, is in the command's repository).
 */
const INTERPOLATED: Record<string, Record<string, string>> = {
  'src/platform/events/event-log.ts': { 'event.from': 'the rows of the calling statement (its CTE), named in its repository' },
};

/** Where a SQL statement names a table: after these words (ONLY and LATERAL may follow). */
const LEAD = /\b(FROM|JOIN|INTO|UPDATE|USING|TABLE|TRUNCATE|REFERENCES)\s+(?:(?:ONLY|LATERAL)\s+)?/gi;
/** A table name, maybe quoted, maybe under its schema. */
const NAME = /^(?:"?[A-Za-z_][\w$]*"?\s*\.\s*)?("?)([A-Za-z_][\w$]*)\1/;
/** Words that end a FROM item where an alias could stand. */
const CLAUSE =
  /^(WHERE|JOIN|LEFT|RIGHT|INNER|FULL|CROSS|NATURAL|ON|GROUP|ORDER|LIMIT|OFFSET|HAVING|WINDOW|UNION|EXCEPT|INTERSECT|FOR|SET|RETURNING|WITH|USING|VALUES|SELECT|AND|OR|DO|TABLESAMPLE)$/i;
/** What makes a literal a statement even when it names no table. */
const STATEMENT = /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|LOCK|TRUNCATE|MERGE|LISTEN|NOTIFY)\s/;

/** Skips a balanced `( ... )` at `at`, answering where it ends (or `at` when there is none). */
function skipParens(sql: string, at: number): number {
  if (sql[at] !== '(') return at;
  let depth = 0;
  for (let i = at; i < sql.length; i++) {
    if (sql[i] === '(') depth++;
    else if (sql[i] === ')' && --depth === 0) return i + 1;
  }
  return sql.length;
}

/**
 * The tables of `known` that a SQL text names, and the interpolations that stand where a table's name goes
 * (`FROM ${table}`: only after a keyword in capitals, as the tree writes SQL, so that "from ${minimum} to" in a
 * message is not taken for one). A FROM (or USING) list is followed item by item (`FROM a x, b AS y, unnest(...) z`);
 * subqueries are read where their own FROM stands.
 */
function tablesIn(sql: string, known: ReadonlySet<string>): { tables: string[]; interpolated: string[] } {
  const tables = new Set<string>();
  const interpolated: string[] = [];
  for (const lead of sql.matchAll(LEAD)) {
    let at = lead.index + lead[0].length;
    const list = /^(FROM|USING)$/i.test(lead[1]);
    for (;;) {
      if (sql[at] === UNKNOWN) {
        if (lead[1] === lead[1].toUpperCase()) interpolated.push(sql.slice(at + 1, sql.indexOf(UNKNOWN_END, at)));
        break;
      }
      const name = NAME.exec(sql.slice(at));
      if (name) {
        const table = name[1] ? name[2] : name[2].toLowerCase();
        if (known.has(table)) tables.add(table);
        at += name[0].length;
      }
      if (!list) break;
      at = skipParens(sql, at);
      // An alias (with or without AS), and the alias's column list.
      const alias = /^\s+(?:AS\s+)?("?)([A-Za-z_][\w$]*)\1/i.exec(sql.slice(at));
      if (alias && !CLAUSE.test(alias[2])) at = skipParens(sql, at + alias[0].length);
      const comma = /^\s*,\s*(?:LATERAL\s+)?/i.exec(sql.slice(at));
      if (!comma) break;
      at += comma[0].length;
      at = skipParens(sql, at);
    }
  }
  return { tables: [...tables], interpolated };
}

interface Literal {
  line: number;
  text: string;
}

interface ParsedFile {
  literals: Literal[];
  /** Lines of `.query(` calls. */
  queryCalls: number[];
  /** Identifiers used as values (not as types), with the line of their first use. */
  identifiers: Map<string, number>;
  /** Classes decorated with `@Entity`, with the table each maps (null: no name given). */
  entities: Array<{ className: string; table: string | null }>;
}

/** Reads one file's literals (templates with their constants filled in), `.query(` calls, identifiers and entities. */
function parse(file: string, code: string): ParsedFile {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest, true);
  const constants = new Map<string, ts.Expression>();
  const line = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const parsed: ParsedFile = { literals: [], queryCalls: [], identifiers: new Map(), entities: [] };

  const collectConstants = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) constants.set(node.name.text, node.initializer);
    ts.forEachChild(node, collectConstants);
  };
  collectConstants(source);

  /** The text an expression stands for, as far as the file tells. */
  const textOf = (node: ts.Expression, seen: Set<string> = new Set()): string => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (ts.isTemplateExpression(node)) return node.head.text + node.templateSpans.map((span) => textOf(span.expression, seen) + span.literal.text).join('');
    if (ts.isParenthesizedExpression(node)) return textOf(node.expression, seen);
    if (ts.isConditionalExpression(node)) return `${textOf(node.whenTrue, seen)} ${textOf(node.whenFalse, seen)}`;
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) return textOf(node.left, seen) + textOf(node.right, seen);
    if (ts.isIdentifier(node) && constants.has(node.text) && !seen.has(node.text)) {
      return textOf(constants.get(node.text)!, new Set([...seen, node.text]));
    }
    return UNKNOWN + node.getText(source) + UNKNOWN_END;
  };

  const visit = (node: ts.Node, inType = false): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return;
    inType ||= ts.isTypeNode(node);
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      parsed.literals.push({ line: line(node), text: textOf(node) });
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'query') {
      parsed.queryCalls.push(line(node));
    }
    // Values only: an entity named as a type (a view's parameter) reaches no table.
    if (ts.isIdentifier(node) && !inType && !parsed.identifiers.has(node.text)) parsed.identifiers.set(node.text, line(node));
    if (ts.isClassDeclaration(node) && node.name) {
      for (const decorator of ts.getDecorators(node) ?? []) {
        const call = decorator.expression;
        if (!ts.isCallExpression(call) || !ts.isIdentifier(call.expression) || call.expression.text !== 'Entity') continue;
        const [argument] = call.arguments;
        let table: string | null = null;
        if (argument && ts.isStringLiteral(argument)) table = argument.text;
        if (argument && ts.isObjectLiteralExpression(argument)) {
          for (const property of argument.properties) {
            if (ts.isPropertyAssignment(property) && property.name.getText(source) === 'name' && ts.isStringLiteral(property.initializer)) {
              table = property.initializer.text;
            }
          }
        }
        parsed.entities.push({ className: node.name.text, table });
      }
    }
    ts.forEachChild(node, (child) => visit(child, inType));
  };
  visit(source);
  return parsed;
}

/** What the tree declares: each entity's table and class, under its owner. */
interface Ownership {
  /** Table → owner. */
  tables: Map<string, string>;
  /** Entity class → owner. */
  entityClasses: Map<string, string>;
}

/** What is wrong with one file, one line per finding (`path:line: ...`). */
function findingsIn(file: string, parsed: ParsedFile, ownership: Ownership): string[] {
  const { owner, kind } = ownerOf(file);
  const known = new Set(ownership.tables.keys());
  const findings = new Set<string>();
  const repository = file.endsWith('.repository.ts');
  const holdsSql = (at: number) => {
    if (kind === 'module' && !repository) findings.add(`${file}:${at}: SQL outside a repository (move it into the ${owner} module's repository)`);
    if (kind === 'other') findings.add(`${file}:${at}: SQL outside the modules and the platform (use a module's providers)`);
  };
  for (const { line, text } of parsed.literals) {
    const { tables, interpolated } = tablesIn(text, known);
    for (const table of tables) {
      const tableOwner = ownership.tables.get(table)!;
      if (tableOwner !== owner) findings.add(`${file}:${line}: names ${table}, a table of ${tableOwner}`);
    }
    for (const expression of interpolated.filter((expression) => !INTERPOLATED[file]?.[expression])) {
      findings.add(`${file}:${line}: names a table through \${${expression}}, which this test cannot read: write the name in the text`);
    }
    if (tables.length > 0 || STATEMENT.test(text)) holdsSql(line);
  }
  for (const at of parsed.queryCalls) holdsSql(at);
  for (const [identifier, at] of parsed.identifiers) {
    const entityOwner = ownership.entityClasses.get(identifier);
    if (entityOwner && entityOwner !== owner) findings.add(`${file}:${at}: uses ${identifier}, an entity of ${entityOwner}`);
  }
  return [...findings];
}

/** Every TypeScript file of src/ the rule judges (see above), relative to the root. */
function sourceFiles(): string[] {
  return (readdirSync(SRC, { recursive: true }) as string[])
    .map((path) => join('src', path))
    .filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts') && !path.endsWith('.spec.ts'))
    .filter((path) => !path.startsWith(join('src', 'migrations') + sep) && path !== join('src', 'schema.ts'))
    .filter((path) => path !== join('src', 'platform', 'database', 'snapshot.ts'))
    .sort();
}

describe('Table ownership: only a table’s owner names it in SQL', () => {
  let database: TestDatabase;
  let opened: OpenDatabase;
  let catalog: string[];
  const files = new Map(sourceFiles().map((file) => [file, parse(file, readFileSync(join(ROOT, file), 'utf8'))]));
  const entities = [...files].flatMap(([file, parsed]) => parsed.entities.map((entity) => ({ ...entity, file, owner: ownerOf(file).owner })));
  const ownership: Ownership = {
    tables: new Map([...entities.map((entity) => [entity.table!, entity.owner] as const), ...Object.entries(WITHOUT_ENTITY)]),
    entityClasses: new Map(entities.map((entity) => [entity.className, entity.owner])),
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    opened = await openDatabase(loadConfig(database.env), { migrate: false });
    const rows: Array<{ table: string }> = await opened.dataSource.query(`
      SELECT c.relname AS table FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`);
    catalog = rows.map((row) => row.table);
  });

  afterAll(async () => {
    await opened?.close();
    await database?.drop();
  });

  it('gives every table of the migrated schema exactly one owner: the module (or platform part) of its entity, else the list of tables without one', () => {
    expect(entities.filter((entity) => entity.table === null).map((entity) => `${entity.file}: ${entity.className} names no table`)).toEqual([]);
    const mapped = entities.map((entity) => entity.table!);
    expect(mapped.filter((table, i) => mapped.indexOf(table) !== i)).toEqual([]);
    expect(Object.keys(WITHOUT_ENTITY).filter((table) => mapped.includes(table))).toEqual([]);
    expect([...ownership.tables.keys()].sort()).toEqual(catalog);
  });

  it('reads the statements of every module with tables and of the platform’s stores', () => {
    const owners = new Set([...ownership.tables.values()]);
    const naming = new Set<string>();
    for (const [file, parsed] of files) {
      for (const { text } of parsed.literals) if (tablesIn(text, new Set(catalog)).tables.length > 0) naming.add(ownerOf(file).owner);
    }
    expect([...owners].filter((owner) => !naming.has(owner))).toEqual([]);
  });

  it('finds no statement naming another owner’s table, no SQL outside a repository, and no entity used outside its module', () => {
    const findings = [...files].flatMap(([file, parsed]) => findingsIn(file, parsed, ownership));
    expect(findings).toEqual([]);
  });

  describe('the reader', () => {
    const judge = (file: string, code: string) => findingsIn(file, parse(file, code), ownership);

    it.each([
      [
        'a join with another module’s table',
        'src/modules/computers/computers.repository.ts',
        "q.query('x', 'SELECT c.id FROM computers c JOIN users u ON u.id = c.owner_id', []);",
        [/names users, a table of auth/],
      ],
      [
        'a second table of a FROM list',
        'src/modules/analytics/analytics.repository.ts',
        "q.query('x', 'SELECT 1 FROM analytics_days d, token_usage_daily AS t, unnest($1::uuid[]) u(id) WHERE true', []);",
        [/names token_usage_daily, a table of sessions/],
      ],
      [
        'a fragment kept in a constant',
        'src/modules/readiness/readiness.repository.ts',
        'const JOINED = `LEFT JOIN "sessions" s ON s.id = r.session_id`;\nexport const T = `SELECT 1 FROM readiness_reports r ${JOINED}`;',
        [/:1: names sessions, a table of sessions/, /:2: names sessions, a table of sessions/],
      ],
      [
        'a write to a platform table',
        'src/modules/webhooks/webhooks.repository.ts',
        "q.query('x', 'DELETE FROM public.events WHERE seq < $1', []);",
        [/names events, a table of platform\/events/],
      ],
      [
        'the platform reading a module’s table',
        'src/platform/events/event-log.ts',
        "q.query('x', 'UPDATE sessions SET title = $1', []);",
        [/names sessions, a table of sessions/],
      ],
      [
        'SQL in a service',
        'src/modules/sessions/sessions.service.ts',
        "this.sql.query('x', 'SELECT pg_advisory_xact_lock($1)', [1]);",
        [/SQL outside a repository/],
      ],
      [
        'a statement in a controller',
        'src/modules/health/health.controller.ts',
        "const text = 'SELECT 1 AS ok FROM migrations LIMIT 1';",
        [/platform\/database/, /outside a repository/],
      ],
      ['SQL in the CLI', 'src/cli/commands.ts', "db.query('SELECT 1');", [/outside the modules and the platform/]],
      [
        'a table the text does not hold',
        'src/modules/webhooks/webhooks.repository.ts',
        'q.query(`x`, `SELECT 1 FROM ${table()}`, []);',
        [/through \$\{table\(\)\}, which this test cannot read/],
      ],
      [
        'another module’s entity',
        'src/modules/analytics/analytics.repository.ts',
        'manager.getRepository(UserEntity).findOneBy({ id });',
        [/UserEntity, an entity of auth/],
      ],
    ])('refuses %s', (_, file, code, expected) => {
      const found = judge(file, code);
      expect(found).toHaveLength(expected.length);
      expected.forEach((pattern, i) => expect(found[i]).toMatch(pattern));
    });

    it.each([
      [
        'a module’s own tables',
        'src/modules/sessions/sessions.repository.ts',
        "q.query('x', 'SELECT 1 FROM sessions s JOIN messages m ON m.session_id = s.id', []);",
      ],
      [
        'a platform part’s own tables in any of its files',
        'src/platform/events/durable-listeners.ts',
        "q.query('x', 'SELECT last_seq FROM event_sequences', []);",
      ],
      ['words that are not SQL', 'src/modules/sessions/sessions.service.ts', 'throw new Error(`Select a computer: ${name} was moved from ${from} to ${to}.`);'],
      ['an entity named as a type elsewhere', 'src/cli/commands.ts', 'function userView(user: UserEntity) { return user.id; }'],
      ['a column named like a table', 'src/modules/webhooks/webhooks.repository.ts', "q.query('x', 'UPDATE webhooks SET events = $1 RETURNING events', []);"],
    ])('lets through %s', (_, file, code) => {
      expect(judge(file, code)).toEqual([]);
    });
  });
});
