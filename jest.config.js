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

module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  transform: {
    '^.+\\.ts$': swc('typescript'),
    '^.+\\.m?js$': swc('ecmascript'),
  },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  globalSetup: '<rootDir>/test/utils/global-setup.ts',
  globalTeardown: '<rootDir>/test/utils/global-teardown.ts',
  testTimeout: 60_000,
};
