#!/usr/bin/env node
'use strict';
/**
 * agent-platform: starts the built server, the demo, the reference agent, a worker or the CLI.
 *
 * In a source checkout (src/ and TypeScript present) it first compiles, but only when a file under src/ or a
 * tsconfig changed since the last successful build: a stat of the sources (tens of milliseconds) decides, and
 * `tsc -b` then compiles what changed. An installed package (no src/) runs its dist/ as it is.
 * The program runs in this process (no second Node start-up); compiler output goes to stderr, so the CLI's
 * stdout stays the command's JSON.
 *
 * The agent's contract (src/contract) takes the agent channel's types from the server's OpenAPI document, which is
 * exported from the compiled server: after the compile, the document is written without a database (Nest's preview
 * mode, ~2.5 s, only when src/ changed since it was last written) and the contract's types are generated from it
 * (src/contract/generated, never committed) when it changed; then the compile is checked again against them (see
 * build()).
 *
 * Then the web console (web/), the same way: when a file under web/ changed, or the document did, since its last
 * build: the console's API types are generated from the document, the console is type-checked against them (a
 * contract change fails the build here) and Vite bundles it into dist/web, which the server serves.
 */
const { existsSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, utimesSync, mkdirSync } = require('node:fs');
const { join, resolve } = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = resolve(__dirname, '..');
const DIST = join(ROOT, 'dist');
const SRC = join(ROOT, 'src');
/** Written after every successful build; its mtime is the build's start. */
const STAMP = join(DIST, '.build-stamp');
const TSCONFIGS = ['tsconfig.json', 'tsconfig.build.json'];
const WEB = join(ROOT, 'web');
/** Generated at build time, never committed: the OpenAPI document and the console's TypeScript types made from it. */
const WEB_GENERATED = join(WEB, 'src', 'api', 'generated');
const OPENAPI = join(WEB_GENERATED, 'openapi.json');
/** Generated at build time from the same document, never committed: the agent contract's types. */
const CONTRACT_GENERATED = join(SRC, 'contract', 'generated');
const CONTRACT_TYPES = join(CONTRACT_GENERATED, 'openapi.d.ts');
/**
 * openapi-typescript reads `{type: "object"}` without properties as an empty object (`Record<string, never>`);
 * JSON Schema, and the server, read it as any object (a tool call's `input`). And it makes a property with a `default`
 * required, which a request may leave out (the server's request types come from these schemas too).
 */
const CONTRACT_TYPE_OPTIONS = ['--empty-objects-unknown', '--default-non-nullable', 'false'];
/** Outside dist/web, which Vite empties: mtime = the start of the console's last successful build. */
const WEB_STAMP = join(DIST, '.web-build-stamp');
/** mtime = when the OpenAPI document was last exported from the built server (rewritten only when it changed). */
const OPENAPI_STAMP = join(DIST, '.openapi-stamp');

const PROGRAMS = {
  serve: { file: 'main.js', args: [], about: 'start the server (npm start)' },
  demo: { file: 'main.js', args: ['--demo'], about: 'seed the demo organizations, then start the server (npm run demo)' },
  agent: { file: 'agent/main.js', args: [], about: 'run the reference agent on a computer (agent --help)', help: true },
  cli: { file: 'cli/main.js', args: [], about: 'administration: organizations, users, keys (cli help)' },
  worker: {
    file: 'worker/main.js',
    args: [],
    about: 'run a worker that provisions and runs managed computers for a pool (worker --help)',
    help: true,
  },
};

const USAGE = `Usage: agent-platform <command> [arguments]

Commands:
${Object.entries(PROGRAMS)
  .map(([name, p]) => `  ${name.padEnd(8)} ${p.about}`)
  .join('\n')}
  build    compile src/ to dist/ and web/ to dist/web (a source checkout only; the commands above do it when sources changed)
  help     this text

Every setting is an environment variable (README, "Configuration"), e.g.
  PORT=8080 DATA_DIR=/var/lib/agent-platform agent-platform serve
  agent-platform cli org:create acme "Acme"
  agent-platform cli user:create acme owner@acme.example "Ada Owner" owner
  agent-platform cli key:create acme owner@acme.example first-key`;

/** Newest mtime (ms) of a tree, its folders included (a deleted file changes its folder's); `skip` folders left out. */
function newestMtime(root, skip = []) {
  let newest = 0;
  const visit = (dir) => {
    newest = Math.max(newest, statSync(dir).mtimeMs);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!skip.includes(path)) visit(path);
      } else newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  visit(root);
  return newest;
}

/** Newest mtime (ms) among src/**, its folders and the tsconfigs; the contract's generated types are the build's own output. */
function newestSourceMtime() {
  let newest = newestMtime(SRC, [CONTRACT_GENERATED]);
  for (const file of TSCONFIGS) if (existsSync(join(ROOT, file))) newest = Math.max(newest, statSync(join(ROOT, file)).mtimeMs);
  return newest;
}

function mtimeOf(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}

function stampMtime() {
  return mtimeOf(STAMP);
}

function writeStamp(file, startedAt) {
  mkdirSync(DIST, { recursive: true });
  writeFileSync(file, `${new Date(startedAt).toISOString()}\n`);
  // The stamp dates from the build's start: a file saved while it ran is newer, so the next start builds again.
  utimesSync(file, new Date(startedAt), new Date(startedAt));
}

function resolveTool(request) {
  try {
    return require.resolve(request, { paths: [ROOT] });
  } catch {
    return undefined;
  }
}

function installedFile(pkg, file) {
  const path = join(ROOT, 'node_modules', pkg, file);
  return existsSync(path) ? path : undefined;
}

function typescriptCompiler() {
  return resolveTool('typescript/bin/tsc');
}

function run(label, args) {
  const result = spawnSync(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (result.status === 0) return 0;
  console.error(`\nagent-platform: ${label} failed (${result.error?.message ?? `exit code ${result.status}`}); fix the errors above.`);
  return result.status || 1;
}

/** The OpenAPI document from the built server, when src/ changed since it was last written; rewritten only when it changed. */
function exportOpenApi() {
  const startedAt = Date.now();
  if (existsSync(OPENAPI) && mtimeOf(OPENAPI_STAMP) >= newestSourceMtime()) return 0;
  const fresh = `${OPENAPI}.tmp`;
  const code = run('exporting the OpenAPI document', [join(DIST, 'tools', 'export-openapi.js'), fresh]);
  if (code !== 0) return code;
  const same = existsSync(OPENAPI) && readFileSync(OPENAPI).equals(readFileSync(fresh));
  if (same) unlinkSync(fresh);
  else renameSync(fresh, OPENAPI);
  writeStamp(OPENAPI_STAMP, startedAt);
  return 0;
}

/**
 * The web console: (1) after a server build, the OpenAPI document, rewritten only when it changed; (2) when
 * web/ or the document changed since the console's last build: its API types, a type check, the Vite build.
 * Returns an exit code. Without Vite (installed with --omit=dev) the server runs without (a new) console.
 */
function buildWeb(announce) {
  if (!existsSync(join(WEB, 'index.html'))) return 0;
  // Their package exports hide these files from require.resolve: they are found where npm puts them.
  const vite = installedFile('vite', 'bin/vite.js');
  const generate = installedFile('openapi-typescript', 'bin/cli.js');
  const tsc = typescriptCompiler();
  if (!vite || !generate || !tsc) {
    console.error("agent-platform: the web console's build tools are not installed (npm install without --omit=dev): the server runs without rebuilding it.");
    return 0;
  }
  const startedAt = Date.now();
  const exported = exportOpenApi();
  if (exported !== 0) return exported;
  // The console's stamp dates from after the export: the document just written is not newer than its build.
  const webStartedAt = Date.now();
  const webStamp = mtimeOf(WEB_STAMP);
  const newest = Math.max(
    newestMtime(WEB, [WEB_GENERATED]),
    mtimeOf(OPENAPI),
    mtimeOf(join(ROOT, 'package-lock.json')),
    existsSync(join(DIST, 'web', 'index.html')) ? 0 : Infinity,
  );
  if (webStamp >= 0 && newest <= webStamp) return 0;
  if (announce) process.stderr.write('agent-platform: the web console changed since its last build; building it... ');
  const steps = [
    ["generating the console's API types", [generate, OPENAPI, '--output', join(WEB_GENERATED, 'api.d.ts')]],
    ['type-checking the console against the API', [tsc, '-p', join(WEB, 'tsconfig.json')]],
    ['bundling the console (vite build)', [vite, 'build', '--config', join(WEB, 'vite.config.mts')]],
  ];
  for (const [label, args] of steps) {
    const code = run(label, args);
    if (code !== 0) return code;
  }
  writeStamp(WEB_STAMP, webStartedAt);
  if (announce) process.stderr.write(`done in ${((Date.now() - startedAt) / 1000).toFixed(1)} s\n`);
  return 0;
}

/**
 * `tsc -b` (incremental: unchanged files are not compiled again), the OpenAPI document, the contract's types when the
 * document changed, then the stamp. Returns an exit code.
 *
 * The contract's types come from the compiled server, which the compile itself needs: `tsc -b` writes its JavaScript
 * even when it reports type errors, and types leave nothing in it, so a contract missing (a fresh clone) or stale
 * does not stop the server being compiled and its document exported. When the types were (re)generated, `tsc -b`
 * checks again (only the files the change reaches) and its verdict stands; otherwise the first compile's does. With
 * nothing changed: one up-to-date `tsc -b` and a few stats, as before.
 */
function build(reason) {
  const tsc = typescriptCompiler();
  const generate = installedFile('openapi-typescript', 'bin/cli.js');
  if (!tsc || !generate) {
    console.error('agent-platform: TypeScript or openapi-typescript is not installed (npm install without --omit=dev), so src/ cannot be compiled.');
    return 1;
  }
  // Made before the build's start: adding it to src/contract changes that folder's mtime, a source change otherwise.
  mkdirSync(CONTRACT_GENERATED, { recursive: true });
  // The server's request and answer types are the contract's too (ApiSchema): without the file, they name nothing, and
  // the decorator metadata of what they type (an entity's column, a route's body) would refer to an import the compile
  // dropped, so the first compile could not run to export the document. Until the document's types are generated, they
  // are `any`; dated 1970, so always older than the document.
  if (!existsSync(CONTRACT_TYPES)) {
    writeFileSync(CONTRACT_TYPES, 'export type components = any;\nexport type paths = any;\n');
    utimesSync(CONTRACT_TYPES, 0, 0);
  }
  const startedAt = Date.now();
  if (reason) process.stderr.write(`agent-platform: ${reason}; compiling (tsc -b)... `);
  // Its errors are shown only if they stand once the contract is current (a fresh clone's missing contract is not one).
  const compiled = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const compileErrors = () => process.stderr.write(`\n${compiled.stdout ?? ''}${compiled.stderr ?? ''}`);
  let code = exportOpenApi();
  if (code !== 0) {
    if (compiled.status !== 0) compileErrors();
    return code;
  }
  // Made again when the document, this launcher (its options) or the installed generator changed.
  const stale = mtimeOf(CONTRACT_TYPES) < Math.max(mtimeOf(OPENAPI), mtimeOf(__filename), mtimeOf(join(ROOT, 'package-lock.json')));
  if (stale) {
    code = run("generating the agent contract's types", [generate, OPENAPI, ...CONTRACT_TYPE_OPTIONS, '--output', CONTRACT_TYPES]);
    if (code === 0) code = run('the build (tsc -b)', [tsc, '-b', 'tsconfig.build.json']);
  } else if (compiled.status !== 0) {
    compileErrors();
    console.error(`\nagent-platform: the build failed (${compiled.error?.message ?? `tsc exited with ${compiled.status}`}); fix the errors above.`);
    code = compiled.status || 1;
  }
  if (code !== 0) return code;
  writeStamp(STAMP, startedAt);
  if (reason) process.stderr.write(`done in ${((Date.now() - startedAt) / 1000).toFixed(1)} s\n`);
  return 0;
}

/** Compiles when this is a source checkout whose sources are newer than the last build. Returns an exit code. */
function buildIfChanged() {
  if (!existsSync(SRC) || !existsSync(join(ROOT, 'tsconfig.build.json'))) return 0;
  const stamp = stampMtime();
  if (stamp < 0 || newestSourceMtime() > stamp) {
    if (!typescriptCompiler() && existsSync(join(DIST, 'main.js'))) {
      console.error('agent-platform: src/ changed since dist/ was built, but TypeScript is not installed: running dist/ as it is.');
      return 0;
    }
    const code = build(stamp < 0 ? 'no build yet' : 'sources changed since the last build');
    if (code !== 0) return code;
  }
  return buildWeb(true);
}

function main(argv) {
  const [command, ...args] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 64;
  }
  if (command === 'build') {
    if (!existsSync(SRC)) {
      console.error('agent-platform build: no src/ here (an installed package runs its dist/ as shipped); nothing to build.');
      return 0;
    }
    return build(undefined) || buildWeb(false);
  }
  const program = PROGRAMS[command];
  if (!program) {
    console.error(`agent-platform: unknown command "${command}".\n\n${USAGE}`);
    return 64;
  }
  const file = join(DIST, program.file);
  // Help needs no fresh build: what dist/ has says it (a compile can take a minute).
  const helpOnly = program.help === true && (args.includes('--help') || args.includes('-h'));
  const code = helpOnly && existsSync(file) ? 0 : buildIfChanged();
  if (code !== 0) return code;
  if (!existsSync(file)) {
    console.error(`agent-platform: ${file} is missing: run npm run build.`);
    return 1;
  }
  // Node 22.1+: cache compiled code between starts (a no-op where unsupported or not writable).
  require('node:module').enableCompileCache?.();
  process.argv = [process.argv[0], file, ...program.args, ...args];
  require(file);
  return undefined;
}

const code = main(process.argv.slice(2));
if (code !== undefined) process.exitCode = code;
