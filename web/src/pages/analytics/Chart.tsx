import { useEffect, useRef, useState, useSyncExternalStore } from 'react';
import uPlot, { type AlignedData, type Options } from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { downloadCsv, toCsv } from './csv';

export interface Series {
  label: string;
  values: number[];
}

/** Colours distinguishable in light and dark (and by the table beside each chart, for anyone who cannot tell them apart). */
const PALETTE = ['#4c6ef5', '#e8590c', '#2b8a3e', '#c2255c', '#1098ad', '#ae3ec9', '#f59f00', '#495057'];

const subscribeTheme = (onChange: () => void) => {
  const media = window.matchMedia('(prefers-color-scheme: dark)');
  const observer = new MutationObserver(onChange);
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
  media.addEventListener('change', onChange);
  return () => {
    observer.disconnect();
    media.removeEventListener('change', onChange);
  };
};
const themeKey = () => `${document.documentElement.dataset.theme ?? ''}:${window.matchMedia('(prefers-color-scheme: dark)').matches}`;

/**
 * A chart (uPlot, on a canvas) with its text alternative: a one-line summary as the canvas's label, and the same
 * numbers as a table (shown on request) that a CSV download gives as they are shown.
 * `stacked`: bars stacked per x (each series drawn as the running total, the largest behind).
 */
export function Chart(props: {
  title: string;
  summary: string;
  x: string[];
  xLabel: string;
  series: Series[];
  kind: 'lines' | 'bars' | 'stacked';
  csvName: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const [showTable, setShowTable] = useState(false);
  const theme = useSyncExternalStore(subscribeTheme, themeKey);

  useEffect(() => {
    const element = box.current;
    if (!element || props.x.length === 0) return;
    const style = getComputedStyle(document.documentElement);
    const text = style.getPropertyValue('--text').trim() || '#222';
    const grid = style.getPropertyValue('--border').trim() || '#ccc';
    const bars = props.kind !== 'lines';
    // Stacked: running totals, drawn from the top series down so each bar shows its own share.
    const drawn =
      props.kind === 'stacked'
        ? props.series.map((_, i) => props.x.map((__, j) => props.series.slice(0, i + 1).reduce((sum, s) => sum + (s.values[j] ?? 0), 0)))
        : props.series.map((s) => s.values);
    const order = props.kind === 'stacked' ? [...props.series.keys()].reverse() : [...props.series.keys()];
    const data: AlignedData = [props.x.map((_, i) => i), ...order.map((i) => drawn[i])];
    const options: Options = {
      width: Math.max(280, element.clientWidth),
      height: 260,
      legend: { show: true, live: false },
      cursor: { show: true, points: { show: !bars } },
      scales: { x: { time: false, range: (_, min, max) => [min - 0.5, max + 0.5] }, y: { range: (_, __, max) => [0, max > 0 ? max * 1.05 : 1] } },
      axes: [
        {
          stroke: text,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid },
          values: (_, ticks) => ticks.map((t) => (Number.isInteger(t) ? (props.x[t] ?? '') : '')),
          space: 70,
        },
        { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, size: 60, values: (_, ticks) => ticks.map(compact) },
      ],
      series: [
        { label: props.xLabel, value: (_, i) => (i === null ? '' : (props.x[i] ?? '')) },
        ...order.map((i) => ({
          label: props.series[i].label,
          stroke: PALETTE[i % PALETTE.length],
          fill: bars ? PALETTE[i % PALETTE.length] : undefined,
          width: bars ? 0 : 2,
          paths: bars ? uPlot.paths.bars!({ size: [0.7, 60] }) : undefined,
          points: { show: !bars && props.x.length < 40 },
          // The legend shows each series' own value, not the running total drawn.
          value: (_: uPlot, __: number | null, ___: number, index: number | null) => (index === null ? '' : compact(props.series[i].values[index] ?? 0)),
        })),
      ],
    };
    const plot = new uPlot(options, data, element);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(280, element.clientWidth), height: 260 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [props.x, props.series, props.kind, props.xLabel, theme]);

  const header = [props.xLabel, ...props.series.map((s) => s.label)];
  const rows = props.x.map((x, i) => [x, ...props.series.map((s) => s.values[i] ?? 0)]);
  return (
    <section className="chart-card" aria-label={props.title}>
      <h2>{props.title}</h2>
      {props.x.length === 0 || props.series.length === 0 ? (
        <p className="muted">Nothing in this range.</p>
      ) : (
        <>
          <div className="chart" ref={box} role="img" aria-label={`${props.title}: ${props.summary}`} />
          <p className="chart-summary">{props.summary}</p>
          <div className="chart-actions">
            <button type="button" className="small" aria-expanded={showTable} onClick={() => setShowTable(!showTable)}>
              {showTable ? 'Hide the table' : 'Show as a table'}
              <span className="visually-hidden"> ({props.title})</span>
            </button>
            <button type="button" className="small" onClick={() => downloadCsv(props.csvName, toCsv(header, rows))}>
              Download CSV<span className="visually-hidden"> ({props.title})</span>
            </button>
          </div>
          {showTable ? (
            <div className="table-scroll" tabIndex={0} role="region" aria-label={`${props.title} as a table`}>
              <table className="data-table">
                <caption className="visually-hidden">{props.title}</caption>
                <thead>
                  <tr>
                    {header.map((h) => (
                      <th scope="col" key={h}>
                        {h}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {rows.map((row) => (
                    <tr key={String(row[0])}>
                      <th scope="row">{row[0]}</th>
                      {row.slice(1).map((value, i) => (
                        <td key={i}>{value}</td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : null}
        </>
      )}
    </section>
  );
}

const formatter = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });
export const compact = (value: number) => formatter.format(value);
