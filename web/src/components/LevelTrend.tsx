import { useId } from 'react';
import { formatTime } from '../format';

export interface LevelPoint {
  reportId: string;
  createdAt: number;
  level: number;
}

const WIDTH = 640;
const HEIGHT = 220;
const PAD = { left: 112, right: 16, top: 14, bottom: 30 };
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

/**
 * A repository's maturity level over time: a step line (a level holds until the next report), one dot per report,
 * levels 1-5 on the vertical axis. Plain SVG (no chart library: one line on a fixed scale does not need one), styled
 * by CSS variables so it follows light and dark. For screen readers: the caption's summary describes the image, and
 * the points are a table on demand.
 */
export function LevelTrend({ points, levelNames, selected }: { points: LevelPoint[]; levelNames: string[]; selected?: string }) {
  const id = useId();
  const max = levelNames.length || 5;
  if (points.length === 0) return null;
  const first = points[0].createdAt;
  const last = points[points.length - 1].createdAt;
  const span = Math.max(1, last - first);
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const x = (time: number) => PAD.left + (points.length === 1 ? plotWidth / 2 : ((time - first) / span) * plotWidth);
  const y = (level: number) => PAD.top + ((max - level) / (max - 1)) * plotHeight;
  const path = points.map((point, i) => (i === 0 ? `M ${x(point.createdAt)} ${y(point.level)}` : `H ${x(point.createdAt)} V ${y(point.level)}`)).join(' ');
  const name = (level: number) => levelNames[level - 1] ?? `Level ${level}`;
  const summary =
    points.length === 1
      ? `One report, on ${formatTime(first)}: level ${points[0].level} (${name(points[0].level)}).`
      : `${points.length} reports from ${formatTime(first)} to ${formatTime(last)}: level ${points[0].level} (${name(points[0].level)}) at first, ` +
        `level ${points[points.length - 1].level} (${name(points[points.length - 1].level)}) now; lowest ${Math.min(...points.map((p) => p.level))}, highest ${Math.max(...points.map((p) => p.level))}.`;
  return (
    <figure className="trend">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby={`${id}-title`} aria-describedby={`${id}-desc`}>
        <title id={`${id}-title`}>Maturity level over time</title>
        {Array.from({ length: max }, (_, i) => i + 1).map((level) => (
          <g key={level}>
            <line className="grid" x1={PAD.left} x2={WIDTH - PAD.right} y1={y(level)} y2={y(level)} />
            <text className="axis" x={PAD.left - 8} y={y(level) + 4} textAnchor="end">
              {level} {name(level)}
            </text>
          </g>
        ))}
        <text className="axis" x={PAD.left} y={HEIGHT - 8} textAnchor="start">
          {dateOnly.format(first)}
        </text>
        {points.length > 1 ? (
          <text className="axis" x={WIDTH - PAD.right} y={HEIGHT - 8} textAnchor="end">
            {dateOnly.format(last)}
          </text>
        ) : null}
        <path className="line" d={path} />
        {points.map((point) => (
          <circle
            key={point.reportId}
            className={point.reportId === selected ? 'point selected' : 'point'}
            cx={x(point.createdAt)}
            cy={y(point.level)}
            r={point.reportId === selected ? 7 : 4}
          >
            <title>{`${formatTime(point.createdAt)}: level ${point.level}`}</title>
          </circle>
        ))}
      </svg>
      <figcaption className="hint" id={`${id}-desc`}>
        {summary}
      </figcaption>
      <details>
        <summary>The reports as a table</summary>
        <table className="table">
          <caption className="visually-hidden">Level of each report</caption>
          <thead>
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Level</th>
            </tr>
          </thead>
          <tbody>
            {[...points].reverse().map((point) => (
              <tr key={point.reportId}>
                <td data-label="Received">{formatTime(point.createdAt)}</td>
                <td data-label="Level">
                  {point.level} · {name(point.level)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
