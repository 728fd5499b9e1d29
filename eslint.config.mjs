import js from '@eslint/js';
import importX from 'eslint-plugin-import-x';
import reactHooks from 'eslint-plugin-react-hooks';
import { dirname, relative, resolve, sep } from 'node:path';
import tseslint from 'typescript-eslint';

const SRC = resolve(import.meta.dirname, 'src');

/** Where a file sits in src/: its area (modules, agent, contract, platform...) and, in modules, which module. */
function placeOf(file) {
  const [area, module, ...rest] = relative(SRC, file).split(sep);
  return { area, module, rest, file };
}

/** What src/host may import besides itself and src/contract (paths in src/, without the extension). */
const HOST_MAY_IMPORT = ['agent/sandbox/network-policy'];

/**
 * The design's boundaries, checked on every relative import: a module reaches another only through its index.ts;
 * the agent (a program users run on their own machines) and the contract it shares with the server import nothing
 * of the server; the platform imports no module; the host library (what provisions and runs managed computers on a
 * machine, for the server and for a worker alike) imports only itself, the contract and the agent's network policy;
 * the worker (a program operators run on their machines) only itself, the host library and the contract.
 */
const boundaries = {
  meta: { type: 'problem', schema: [], messages: { crossed: '{{why}}' } },
  create(context) {
    const from = placeOf(context.filename);
    const isSpec = context.filename.endsWith('.spec.ts');
    function check(node, source) {
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const to = placeOf(resolve(dirname(context.filename), source));
      let why = null;
      if (
        from.area === 'modules' &&
        to.area === 'modules' &&
        to.module !== from.module &&
        !(to.rest.length === 0 || (to.rest.length === 1 && to.rest[0] === 'index'))
      ) {
        why = `Import the ${to.module} module through its index.ts ('${relative(dirname(context.filename), resolve(SRC, 'modules', to.module))}'), not its insides.`;
      } else if (from.area === 'agent' && !['agent', 'contract'].includes(to.area) && !(isSpec && to.area === '..')) {
        why = 'The agent is a program of its own: it imports only src/agent and src/contract, never the server.';
      } else if (from.area === 'contract' && to.area !== 'contract') {
        why = 'src/contract is shared by the server and the agent: it imports nothing else.';
      } else if (
        from.area === 'host' &&
        !['host', 'contract'].includes(to.area) &&
        !HOST_MAY_IMPORT.includes(relative(SRC, to.file)) &&
        !(isSpec && to.area === '..')
      ) {
        why =
          "src/host runs on the server and on workers alike: it imports only src/host, src/contract and the agent's network policy, never a module, the platform or the configuration.";
      } else if (from.area === 'worker' && !['worker', 'host', 'contract'].includes(to.area) && !(isSpec && to.area === '..')) {
        why = 'The worker is a program of its own, run on other machines: it imports only src/worker, src/host and src/contract, never the server.';
      } else if (from.area === 'platform' && to.area === 'modules') {
        why = 'The platform serves every module and imports none.';
      }
      if (why) context.report({ node, messageId: 'crossed', data: { why } });
    }
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
    };
  },
};

/** One data-access style, and one way in for a request (see the blocks below). */
const ONE_WAY = [
  {
    selector: "CallExpression[callee.property.name='createQueryBuilder']",
    message: 'A statement with a name through Sql (docs/architecture.md, "Data access"), not a query builder.',
  },
  {
    selector:
      "CallExpression[callee.property.name='query']:matches([callee.object.name=/^(manager|dataSource|runner|queryRunner)$/], [callee.object.property.name=/^(manager|dataSource)$/])",
    message: 'A statement with a name through Sql (`sql.query(name, text, values)`, `sql.in(manager)`), not a raw TypeORM query.',
  },
  {
    selector: 'Decorator > CallExpression[callee.name=/^(Body|Query)$/][arguments.length=0]',
    message: 'Every body and query string is checked by its JSON Schema: `@Body(registry.pipe(name))`, `@QuerySchema(registry, name)`.',
  },
];

/** Packages the configuration and requests do without: one schema language (the block that uses it says why). */
const SCHEMA_ONLY = [
  {
    name: '@nestjs/swagger',
    importNames: ['ApiProperty', 'ApiPropertyOptional', 'ApiExtraModels', 'PickType'],
    message: 'Describe shapes as JSON Schemas in the module registry.',
  },
  { name: 'class-validator', message: 'Requests and settings are checked by their JSON Schema (SchemaRegistry, SETTINGS), not class-validator.' },
  { name: 'class-transformer', message: 'Requests and settings are checked by their JSON Schema (SchemaRegistry, SETTINGS), not class-transformer.' },
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', 'test-artifacts/', 'web/src/api/generated/', 'src/contract/generated/', 'jest.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'off',
    },
  },
  { files: ['src/**/*.ts'], plugins: { architecture: { rules: { boundaries } } }, rules: { 'architecture/boundaries': 'error' } },
  // One data-access style (docs/architecture.md, "Data access"): hand-written SQL goes through Sql as named statements,
  // TypeORM does one entity's plain reads and writes; no query builders, no raw TypeORM queries. src/platform/database
  // is the plumbing under both (connection set-up, LISTEN, the migrations' lock).
  {
    files: ['src/**/*.ts'],
    ignores: ['src/platform/database/**', 'src/**/*.spec.ts', 'src/migrations/**'],
    rules: {
      'no-restricted-syntax': ['error', ...ONE_WAY],
    },
  },
  // One schema language (docs/architecture.md, "Adding an endpoint"): every request and answer shape is a JSON Schema
  // in its module's registry, and the configuration is one too (src/config/settings.ts).
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: SCHEMA_ONLY,
        },
      ],
    },
  },
  // The host library runs in a worker too, and the worker is a plain Node program: no Nest, no database.
  {
    files: ['src/host/**/*.ts', 'src/worker/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: SCHEMA_ONLY,
          patterns: [
            {
              group: ['@nestjs/*', 'typeorm', 'pg', '@electric-sql/*'],
              message: "src/host and src/worker are Nest-free and open no database: the host's owner passes what it needs, the worker asks the server.",
            },
          ],
        },
      ],
    },
  },
  // ...and a request's or an answer's TypeScript type is its schema's, generated, never written again.
  {
    files: ['src/modules/**/*.ts'],
    ignores: ['src/**/*.spec.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...ONE_WAY,
        {
          selector:
            'TSInterfaceDeclaration[id.name=/(Body|Query|Input|View|Response)$/], TSTypeAliasDeclaration[id.name=/(Body|Query|Input|View|Response)$/] > TSTypeLiteral',
          message: "A request's or an answer's type is the one generated from its schema: `ApiSchema<'Name'>` (src/platform/http/api-schema.ts).",
        },
      ],
    },
  },
  // Every package imported is declared in package.json (type imports too: the compile needs them). The server, the
  // agent and the launcher run from a production install (--omit=dev, .ci/production-install), so they import
  // `dependencies` only; tests, tools and the console may use devDependencies (Vite bundles the console into dist/web
  // at build time, so nothing of it is loaded from node_modules in production).
  {
    plugins: { 'import-x': importX },
    rules: { 'import-x/no-extraneous-dependencies': ['error', { includeTypes: true }] },
  },
  {
    files: ['src/**/*.ts', 'bin/**/*.js'],
    ignores: ['src/**/*.spec.ts'],
    rules: { 'import-x/no-extraneous-dependencies': ['error', { includeTypes: true, devDependencies: false }] },
  },
  // The console's hooks: called in the same order on every render, and effects, memos and callbacks that name every
  // value they read (a missing one is a stale closure; an error, since a warning would not fail CI). An omission on
  // purpose says why in an eslint-disable comment.
  {
    files: ['web/src/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'error' },
  },
  { files: ['**/*.mjs', '**/*.mts'], ...tseslint.configs.disableTypeChecked },
  // Plain CommonJS run with Node alone: the launcher (bin/), what tests copy into a computer and run there, and
  // the environment and runtime Jest loads for the end-to-end files.
  {
    files: ['bin/**/*.js', 'test/fixtures/**/*.js', 'test/utils/jest/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        process: 'readonly',
        Buffer: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        URL: 'readonly',
        __dirname: 'readonly',
        __filename: 'readonly',
      },
    },
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
  },
);
