// Sets bench/budgets.json from bench runs: `node bench/budgets.mjs [--smoke] <latest.json>...` (see bench/README.md).
// Each scenario's budget becomes the highest CPU µs per request among the runs given, rounded up to 10 µs; with
// --smoke, its `smoke` budget (for CI's smoke run, BENCH_SMOKE=1). Scenarios the runs do not hold keep theirs.
import console from 'node:console';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const FILE = join(dirname(fileURLToPath(import.meta.url)), 'budgets.json');
const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const files = args.filter((a) => a !== '--smoke');
if (files.length === 0) {
  console.error('usage: node bench/budgets.mjs [--smoke] <bench/results/latest.json>...');
  process.exit(2);
}

const budgets = existsSync(FILE) ? JSON.parse(readFileSync(FILE, 'utf8')) : { factor: 1.5, scenarios: {} };
const kind = smoke ? 'smoke' : 'cpuMicrosPerRequest';
const highest = new Map();
const runs = [];
const referenceCpus = [];
for (const file of files) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  if (Boolean(report.run.smoke) !== smoke) {
    console.error(`${file}: a ${report.run.smoke ? 'smoke' : 'full'} run, but setting the ${smoke ? 'smoke' : 'full'} budgets`);
    process.exit(2);
  }
  runs.push({
    finishedAt: report.finishedAt,
    commit: report.commit?.id ?? null,
    machine: `${report.machine.cores} cores (${report.machine.cpu}), ${report.machine.memory}`,
    run: `${report.run.duration} s after ${report.run.warmup} s warm-up, ${report.run.connections} connections`,
  });
  for (const r of report.scenarios) {
    if (r.baseline && !r.sameWorkOf && r.ok && r.cpuMicrosPerRequest != null) referenceCpus.push(r.cpuMicrosPerRequest);
    if (r.baseline || !r.ok || r.cpuMicrosPerRequest == null) continue;
    highest.set(r.name, Math.max(highest.get(r.name) ?? 0, r.cpuMicrosPerRequest));
  }
}
for (const [name, micros] of highest) {
  budgets.scenarios[name] = { ...budgets.scenarios[name], [kind]: Math.ceil(micros / 10) * 10 };
}
budgets.from = { ...budgets.from, [smoke ? 'smoke' : 'full']: runs };
// The primary-key read's mean CPU per request over those runs: a run that finds it dearer (a slower or busier machine)
// scales the budgets up by as much (lib/report.mjs).
budgets.referenceCpuMicrosPerRequest = {
  ...budgets.referenceCpuMicrosPerRequest,
  [kind]: Math.round(referenceCpus.reduce((a, b) => a + b, 0) / referenceCpus.length),
};
const ordered = {
  about:
    "CPU µs per request of each scenario's server (the app), the highest of the runs in `from`: `cpuMicrosPerRequest` from full runs, `smoke` from CI's smoke run (BENCH_SMOKE=1, 2 s runs: a JIT still warming costs more). A scenario over `factor` times its budget misses its target, and fails the smoke run; the budgets grow by as much as the primary-key read's CPU per request in the run exceeds `referenceCpuMicrosPerRequest` (its mean over the same runs). Set by `node bench/budgets.mjs [--smoke] <latest.json>...` (bench/README.md).",
  factor: budgets.factor ?? 1.5,
  referenceCpuMicrosPerRequest: budgets.referenceCpuMicrosPerRequest,
  scenarios: Object.fromEntries(Object.entries(budgets.scenarios).sort(([a], [b]) => a.localeCompare(b))),
  from: budgets.from,
};
writeFileSync(FILE, JSON.stringify(ordered, null, 2) + '\n');
console.log(`${FILE}: ${kind} of ${highest.size} scenarios from ${files.length} run(s)`);
