// Judging measured scenarios against their targets, and printing them.

/**
 * Adds `ratio` (req/s over the baseline's), `verdict` and `targetText` to each result. A scenario is FAILED
 * when any response was not the expected status or a request errored: a fast 404 is no success. A ratio is
 * taken against the baseline run just before the scenario (`pairedBaseline`), else the mean of the baseline runs.
 * `sameWork` (from run.mjs) compares with the scenario's own baseline. `budgets` (bench/budgets.json): each
 * scenario's CPU µs per request, a full run's and the smoke run's (`smoke`); over `factor` times it (times how much
 * dearer the primary-key read is in this run than in the budgets' runs, if it is) misses a target (`budget.pass` false).
 */
export function judge(results, { budgets = null, smoke = false } = {}) {
  const baselines = results.filter((r) => r.baseline && r.ok && !r.sameWorkOf);
  const baselineRps = baselines.length > 0 ? baselines.reduce((sum, r) => sum + r.requestsPerSec, 0) / baselines.length : null;
  // This run's primary-key read: its mean CPU per request, against the budgets' runs' (`referenceCpuMicrosPerRequest`).
  const cpus = baselines.map((r) => r.cpuMicrosPerRequest).filter((v) => v != null);
  const referenceCpu = cpus.length > 0 ? cpus.reduce((a, b) => a + b, 0) / cpus.length : null;
  const byName = new Map(results.map((r) => [r.name, r]));
  for (const r of results) {
    const reference = r.pairedBaseline ?? baselineRps;
    r.ratio = reference && !r.baseline ? r.requestsPerSec / reference : null;
    // The same comparison by CPU spent per request (the baseline's over ours): what req/s would show if each server
    // had a core to itself, and steadier than req/s on a machine other work shares.
    r.cpuRatio = r.pairedBaselineCpu && r.cpuMicrosPerRequest && !r.baseline ? r.pairedBaselineCpu / r.cpuMicrosPerRequest : null;
    const checks = [];
    const { minBaselineRatio, maxMeanLatencyRatio, maxP99Ms, minSameWorkRatio, maxSameWorkCpuFactor, maxWalBytesPerRequest } = r.target ?? {};
    if (minBaselineRatio !== undefined) {
      checks.push({ text: `≥ ${minBaselineRatio}× baseline`, pass: r.ratio === null ? null : r.ratio >= minBaselineRatio });
    }
    const same = r.sameWork ?? null;
    if (minSameWorkRatio !== undefined) {
      checks.push({ text: `≥ ${minSameWorkRatio}× same work`, pass: same?.ratio == null ? null : same.ratio >= minSameWorkRatio });
    }
    if (maxSameWorkCpuFactor !== undefined) {
      // cpuRatio is the baseline's CPU over ours: at most 1.6 times the cost is a cpuRatio of at least 1 / 1.6.
      checks.push({ text: `CPU ≤ ${maxSameWorkCpuFactor}× same work`, pass: same?.cpuRatio == null ? null : same.cpuRatio >= 1 / maxSameWorkCpuFactor });
    }
    if (maxWalBytesPerRequest !== undefined) {
      const pass = r.ok && r.walBytesPerRequest !== undefined ? r.walBytesPerRequest < maxWalBytesPerRequest : null;
      checks.push({ text: `WAL < ${formatBytes(maxWalBytesPerRequest)}/req`, pass });
    }
    const budget = r.baseline ? undefined : budgets?.scenarios?.[r.name];
    const kind = smoke && budget?.smoke !== undefined ? 'smoke' : 'cpuMicrosPerRequest';
    if (budget?.[kind] !== undefined) {
      const factor = budgets.factor ?? 1.5;
      const micros = budget[kind];
      // A slower machine (or a busier one) costs the primary-key read more too: the budgets grow with it, never shrink.
      const reference = budgets.referenceCpuMicrosPerRequest?.[kind];
      const machine = reference && referenceCpu ? Math.max(1, referenceCpu / reference) : 1;
      const limit = factor * micros * machine;
      r.budget = { kind, micros, factor, machine, limit, pass: r.cpuMicrosPerRequest == null ? null : r.cpuMicrosPerRequest <= limit };
      checks.push({ text: `CPU ≤ ${factor}× budget ${micros} µs${machine > 1 ? ` × ${machine.toFixed(2)} (machine)` : ''}`, pass: r.budget.pass });
    }
    if (maxMeanLatencyRatio) {
      const other = byName.get(maxMeanLatencyRatio.of);
      const ratio = other?.ok ? r.latency.mean / other.latency.mean : null;
      r.latencyRatio = ratio;
      checks.push({ text: `mean ≤ ${maxMeanLatencyRatio.ratio}× ${maxMeanLatencyRatio.of}`, pass: ratio === null ? null : ratio <= maxMeanLatencyRatio.ratio });
    }
    if (maxP99Ms !== undefined) checks.push({ text: `p99 < ${maxP99Ms} ms`, pass: r.ok ? r.latency.p99 < maxP99Ms : null });
    r.targetText = checks.map((c) => c.text).join('; ') || '—';
    if (!r.ok) r.verdict = `FAILED (${r.failure})`;
    else if (checks.length === 0) r.verdict = '—';
    else if (checks.some((c) => c.pass === false)) r.verdict = 'fail';
    else if (checks.some((c) => c.pass === null)) r.verdict = 'n/a';
    else r.verdict = 'pass';
  }
  return results;
}

export function markdownTable(results) {
  const ratio = (value) => (value == null ? '—' : value.toFixed(2));
  const rows = [
    [
      'scenario',
      'req/s',
      '× baseline',
      '× same work',
      'CPU µs/req',
      '× baseline (CPU)',
      '× same work (CPU)',
      'p50 ms',
      'p99 ms',
      'mean ms',
      'WAL B/req',
      'non-2xx',
      'errors',
      'target',
      'result',
    ],
    ...results.map((r) => [
      r.name,
      Math.round(r.requestsPerSec).toLocaleString('en'),
      ratio(r.ratio),
      r.sameWork === undefined ? '—' : r.sameWork === null ? 'none' : ratio(r.sameWork.ratio),
      r.cpuMicrosPerRequest == null ? '—' : Math.round(r.cpuMicrosPerRequest).toString(),
      ratio(r.cpuRatio),
      r.sameWork ? ratio(r.sameWork.cpuRatio) : '—',
      r.latency.p50.toFixed(1),
      r.latency.p99.toFixed(1),
      r.latency.mean.toFixed(1) + (r.latencyRatio ? ` (${r.latencyRatio.toFixed(2)}×)` : ''),
      r.walBytesPerRequest === undefined ? '—' : Math.round(r.walBytesPerRequest).toLocaleString('en'),
      r.non2xx.toLocaleString('en'),
      r.errors.toLocaleString('en'),
      r.targetText,
      r.verdict,
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  const line = (row) => `| ${row.map((cell, i) => cell.padEnd(widths[i])).join(' | ')} |`;
  return [line(rows[0]), line(widths.map((w) => '-'.repeat(w))), ...rows.slice(1).map(line)].join('\n');
}

export function formatBytes(bytes) {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}
