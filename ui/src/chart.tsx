/** A series of a chart: its name and its points (time ms, value). */
export interface Series {
  name: string;
  points: [number, number][];
}

const WIDTH = 480;
const HEIGHT = 140;
const PAD = 28;

/** A small SVG line chart (no chart framework): the series over the same time axis, a y scale from 0. */
export function LineChart({ title, unit, series }: { title: string; unit: string; series: Series[] }) {
  const all = series.flatMap((s) => s.points);
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]));
  const max = Math.max(0, ...all.map((p) => p[1])) || 1;
  const x = (t: number) => PAD + ((t - t0) / Math.max(1, t1 - t0)) * (WIDTH - 2 * PAD);
  const y = (v: number) => HEIGHT - PAD / 2 - (v / max) * (HEIGHT - PAD);
  const last = series.map((s) => `${s.name} ${(s.points.at(-1)?.[1] ?? 0).toPrecision(3)} ${unit}`).join(', ');
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        role="img"
        aria-label={`${title}: ${all.length === 0 ? 'no data yet' : last}`}
      >
        <line x1={PAD} y1={HEIGHT - PAD / 2} x2={WIDTH - PAD} y2={HEIGHT - PAD / 2} class="axis" />
        <text x={2} y={12} class="tick">
          {max.toPrecision(3)}
        </text>
        <text x={2} y={HEIGHT - PAD / 2} class="tick">
          0
        </text>
        {series.map((s, i) =>
          s.points.length > 0 ? (
            <polyline
              key={s.name}
              class={`line line-${i}`}
              points={s.points.map(([t, v]) => `${x(t)},${y(v)}`).join(' ')}
            />
          ) : null,
        )}
      </svg>
      <ul class="legend">
        {series.map((s, i) => (
          <li key={s.name} class={`legend-${i}`}>
            {s.name}: {(s.points.at(-1)?.[1] ?? 0).toPrecision(3)} {unit}
          </li>
        ))}
      </ul>
    </figure>
  );
}
