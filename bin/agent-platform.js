#!/usr/bin/env node
'use strict';
/**
 * agent-platform: starts the built server, the demo, the reference agent or the CLI.
 *
 * In a source checkout (src/ and TypeScript present) it first compiles, but only when a file under src/ or a
 * tsconfig changed since the last successful build: a stat of the sources (tens of milliseconds) decides, and
 * `tsc -b` then compiles what changed. An installed package (no src/) runs its dist/ as it is.
 * The program runs in this process (no second Node start-up); compiler output goes to stderr, so the CLI's
 * stdout stays the command's JSON.
 */
const { existsSync, readdirSync, statSync, writeFileSync, utimesSync, mkdirSync } = require('node:fs');
const { join, resolve } = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = resolve(__dirname, '..');
const DIST = join(ROOT, 'dist');
const SRC = join(ROOT, 'src');
/** Written after every successful build; its mtime is the build's start. */
const STAMP = join(DIST, '.build-stamp');
const TSCONFIGS = ['tsconfig.json', 'tsconfig.build.json'];

const PROGRAMS = {
  serve: { file: 'main.js', args: [], about: 'start the server (npm start)' },
  demo: { file: 'main.js', args: ['--demo'], about: 'seed the demo organizations, then start the server (npm run demo)' },
  agent: { file: 'agent/main.js', args: [], about: 'run the reference agent on a computer (agent --help)' },
  cli: { file: 'cli/main.js', args: [], about: 'administration: organizations, users, keys (cli help)' },
};

const USAGE = `Usage: agent-platform <command> [arguments]

Commands:
${Object.entries(PROGRAMS)
  .map(([name, p]) => `  ${name.padEnd(8)} ${p.about}`)
  .join('\n')}
  build    compile src/ to dist/ (a source checkout only; the commands above do it when sources changed)
  help     this text

Every setting is an environment variable (README, "Configuration"), e.g.
  PORT=8080 DATA_DIR=/var/lib/agent-platform agent-platform serve
  agent-platform cli org:create acme "Acme"
  agent-platform cli user:create acme owner@acme.example "Ada Owner" owner
  agent-platform cli key:create acme owner@acme.example first-key`;

/** Newest mtime (ms) among src/**, its folders (a deleted file changes its folder's) and the tsconfigs. */
function newestSourceMtime() {
  let newest = 0;
  const visit = (dir) => {
    newest = Math.max(newest, statSync(dir).mtimeMs);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  visit(SRC);
  for (const file of TSCONFIGS) if (existsSync(join(ROOT, file))) newest = Math.max(newest, statSync(join(ROOT, file)).mtimeMs);
  return newest;
}

function stampMtime() {
  try {
    return statSync(STAMP).mtimeMs;
  } catch {
    return -1;
  }
}

function typescriptCompiler() {
  try {
    return require.resolve('typescript/bin/tsc', { paths: [ROOT] });
  } catch {
    return undefined;
  }
}

/** `tsc -b` (incremental: unchanged files are not compiled again), then the stamp. Returns an exit code. */
function build(reason) {
  const tsc = typescriptCompiler();
  if (!tsc) {
    console.error('agent-platform: TypeScript is not installed (npm install without --omit=dev), so src/ cannot be compiled.');
    return 1;
  }
  const startedAt = Date.now();
  if (reason) process.stderr.write(`agent-platform: ${reason}; compiling (tsc -b)... `);
  const result = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (result.status !== 0) {
    console.error(`\nagent-platform: the build failed (${result.error?.message ?? `tsc exited with ${result.status}`}); fix the errors above.`);
    return result.status || 1;
  }
  mkdirSync(DIST, { recursive: true });
  writeFileSync(STAMP, `${new Date(startedAt).toISOString()}\n`);
  // The stamp dates from the build's start: a file saved while tsc ran is newer, so the next start compiles it.
  utimesSync(STAMP, new Date(startedAt), new Date(startedAt));
  if (reason) process.stderr.write(`done in ${((Date.now() - startedAt) / 1000).toFixed(1)} s\n`);
  return 0;
}

/** Compiles when this is a source checkout whose sources are newer than the last build. Returns an exit code. */
function buildIfChanged() {
  if (!existsSync(SRC) || !existsSync(join(ROOT, 'tsconfig.build.json'))) return 0;
  const stamp = stampMtime();
  if (stamp >= 0 && newestSourceMtime() <= stamp) return 0;
  if (!typescriptCompiler() && existsSync(join(DIST, 'main.js'))) {
    console.error('agent-platform: src/ changed since dist/ was built, but TypeScript is not installed: running dist/ as it is.');
    return 0;
  }
  return build(stamp < 0 ? 'no build yet' : 'sources changed since the last build');
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
    return build(undefined);
  }
  const program = PROGRAMS[command];
  if (!program) {
    console.error(`agent-platform: unknown command "${command}".\n\n${USAGE}`);
    return 64;
  }
  const code = buildIfChanged();
  if (code !== 0) return code;
  const file = join(DIST, program.file);
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
