const { availableParallelism } = require('node:os');

/** Jest on SWC. NestJS 12 and a few of its dependencies ship ES modules only: SWC turns them into CommonJS. */
const swc = (syntax) => [
  '@swc/jest',
  {
    jsc: {
      parser: syntax === 'typescript' ? { syntax, decorators: true } : { syntax },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  },
];

/** Packages the app loads at run time that ship ES modules only. */
const ESM_ONLY = [
  '@nestjs',
  '@secretlint',
  '@redocly',
  '@electric-sql',
  '@seriousme',
  '@borewit',
  '@tokenizer',
  'content-disposition',
  'cookie',
  'file-type',
  'formidable',
  'jose',
  'linguist-languages',
  'set-cookie-parser',
  'strtok3',
  'toad-cache',
  'token-types',
  'uint8array-extras',
  'uuid',
];

/**
 * Files whose outcome cannot depend on the database engine: unit tests (they open no database), checks of the tree
 * and its documents, the readiness evaluator (a CLI on a repository), the fresh clone (always the embedded engine),
 * and the browser tests (the console is a client of the HTTP API, which the end-to-end files test on both engines).
 * CI's second pass, on PostgreSQL, sets TEST_ENGINE_ONLY=1 and leaves them out: they ran in the first.
 */
const ENGINE_NEUTRAL = [
  '<rootDir>/src/',
  '<rootDir>/test/browser/',
  ...[
    'agent-contract',
    'computer-sandbox-user',
    'console-contract',
    'demo-readiness-samples',
    'docker-image',
    'engines',
    'fresh-clone',
    'module-boundaries',
    'openapi-lint',
    'readiness-evaluator-cli',
    'readiness-evaluator-criteria',
    'readiness-evaluator-repositories',
  ].map((name) => `<rootDir>/test/e2e/${name}\\.e2e-spec\\.ts$`),
];

/**
 * Files that measure the machine as a new user finds it, so they run alone (`npm run test:fresh-clone`, a step of its
 * own in CI) and not beside other files: the fresh clone's install and starts are held to wall-clock budgets, which
 * a run of several workers on the same cores made fail three CI runs in a row (a start of 15.6 s at a load of 4 per core).
 */
const SOLO = ['<rootDir>/test/e2e/fresh-clone\\.e2e-spec\\.ts$'];

const ignored = ['/node_modules/', ...(process.env.TEST_ENGINE_ONLY === '1' ? ENGINE_NEUTRAL : []), ...(process.env.TEST_SOLO === '1' ? [] : SOLO)];

/** How every file is loaded, unit or end to end. */
const loading = {
  rootDir: __dirname,
  testEnvironment: 'node',
  testPathIgnorePatterns: ignored,
  transform: {
    '^.+\\.ts$': swc('typescript'),
    '^.+\\.m?js$': swc('ecmascript'),
  },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  setupFiles: ['<rootDir>/test/utils/code-cache.ts'],
};

module.exports = {
  // Two projects, so the unit tests run alone (`npm run test:unit`, `--selectProjects unit`) without the end-to-end
  // files' global setup: a project's setup runs only when one of its files does.
  projects: [
    { ...loading, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    {
      ...loading,
      displayName: 'e2e',
      // A worker's files share one context and the app's modules, loaded once per worker (test/utils/jest).
      testEnvironment: '<rootDir>/test/utils/jest/worker-context-environment.js',
      runtime: '<rootDir>/test/utils/jest/worker-modules-runtime.js',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/test/utils/global-setup.ts',
      globalTeardown: '<rootDir>/test/utils/global-teardown.ts',
    },
  ],
  // A file spends part of its time waiting (on a database, a child process, a browser): one worker more than there are
  // cores keeps them busy. On 2 cores, npm test took 740 s with two workers and 621 s with three on a quiet machine.
  // CI's machine is not quiet: with three workers its load reached 4.5 per core, files of real processes ran 3x slower
  // than alone, and their waits timed out there. CI runs one worker a core.
  maxWorkers: availableParallelism() + (process.env.CI ? 0 : 1),
  // A worker still holding more than this after a file is replaced by a fresh one. What each file's apps leave behind
  // (PGlite's WebAssembly memory, a module registry) otherwise piles up in one long-lived process: the whole suite in
  // one process took twice the CPU time it takes in recycled workers.
  workerIdleMemoryLimit: '1GB',
  // Two minutes: files of real processes (servers, the demo's seed, CLI runs) ran 3x slower in CI than alone (three
  // workers on two cores, load 4.5 per core). A test that hangs still fails, a minute later.
  testTimeout: 120_000,
};
