// Judging measured scenarios against their targets, and printing them.

/**
 * Adds `ratio` (req/s over the baseline's), `verdict` and `targetText` to each result. A scenario is FAILED
 * when any response was not the expected status or a request errored: a fast 404 is no success. A ratio is
 * taken against the baseline run just before the scenario (`pairedBaseline`), else the mean of the baseline runs.
 */
export function judge(results) {
  const baselines = results.filter((r) => r.baseline && r.ok);
  const baselineRps = baselines.length > 0 ? baselines.reduce((sum, r) => sum + r.requestsPerSec, 0) / baselines.length : null;
  const byName = new Map(results.map((r) => [r.name, r]));
  for (const r of results) {
    const reference = r.pairedBaseline ?? baselineRps;
    r.ratio = reference && !r.baseline ? r.requestsPerSec / reference : null;
    // The same comparison by CPU spent per request (the baseline's over ours): what req/s would show if each server
    // had a core to itself, and steadier than req/s on a machine other work shares.
    r.cpuRatio = r.pairedBaselineCpu && r.cpuMicrosPerRequest && !r.baseline ? r.pairedBaselineCpu / r.cpuMicrosPerRequest : null;
    const checks = [];
    const { minBaselineRatio, maxMeanLatencyRatio, maxP99Ms } = r.target ?? {};
    if (minBaselineRatio !== undefined) {
      checks.push({ text: `≥ ${minBaselineRatio}× baseline`, pass: r.ratio === null ? null : r.ratio >= minBaselineRatio });
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
  const rows = [
    ['scenario', 'req/s', '× baseline', 'CPU µs/req', '× baseline (CPU)', 'p50 ms', 'p99 ms', 'mean ms', 'non-2xx', 'errors', 'target', 'result'],
    ...results.map((r) => [
      r.name,
      Math.round(r.requestsPerSec).toLocaleString('en'),
      r.ratio === null ? '—' : r.ratio.toFixed(2),
      r.cpuMicrosPerRequest == null ? '—' : Math.round(r.cpuMicrosPerRequest).toString(),
      r.cpuRatio == null ? '—' : r.cpuRatio.toFixed(2),
      r.latency.p50.toFixed(1),
      r.latency.p99.toFixed(1),
      r.latency.mean.toFixed(1) + (r.latencyRatio ? ` (${r.latencyRatio.toFixed(2)}×)` : ''),
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
