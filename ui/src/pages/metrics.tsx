import { useEffect, useRef, useState } from 'preact/hooks';
import { call } from '../api';
import { LineChart, Series } from '../chart';
import { histogramBuckets, parsePrometheus, quantile, total } from '../prometheus';
import { ErrorNotice } from '../notices';

/** How often /metrics is read, ms. */
const POLL_MS = 3000;
/** Points kept per series (10 minutes at POLL_MS). */
const KEEP = 200;

interface Scrape {
  at: number;
  generated: number;
  running: number;
  queued: number;
  ttft: Map<number, number>;
}

interface Point {
  at: number;
  tokensPerSecond: number;
  running: number;
  queued: number;
  ttftP50?: number;
  ttftP95?: number;
}

/** Metrics: GET /metrics every few seconds, parsed, as small line charts (no dashboard framework). */
export function MetricsPage() {
  const [points, setPoints] = useState<Point[]>([]);
  const [error, setError] = useState('');
  const previous = useRef<Scrape | null>(null);
  useEffect(() => {
    const poll = async () => {
      try {
        const samples = parsePrometheus(await (await call('/metrics')).text());
        const scrape: Scrape = {
          at: Date.now(),
          generated: total(samples, 'llamad_generated_tokens_total'),
          running: total(samples, 'llamad_requests_running'),
          queued: total(samples, 'llamad_requests_queued'),
          ttft: histogramBuckets(samples, 'llamad_time_to_first_token_seconds'),
        };
        const before = previous.current;
        previous.current = scrape;
        const seconds = before ? (scrape.at - before.at) / 1000 : 0;
        const point: Point = {
          at: scrape.at,
          tokensPerSecond: before && seconds > 0 ? Math.max(0, scrape.generated - before.generated) / seconds : 0,
          running: scrape.running,
          queued: scrape.queued,
          ttftP50: quantile(0.5, scrape.ttft, before?.ttft),
          ttftP95: quantile(0.95, scrape.ttft, before?.ttft),
        };
        setPoints((list) => [...list, point].slice(-KEEP));
        setError('');
      } catch (e) {
        setError(e instanceof Error ? e.message : String(e));
      }
    };
    void poll();
    const timer = setInterval(() => void poll(), POLL_MS);
    return () => clearInterval(timer);
  }, []);

  const series = (name: string, pick: (p: Point) => number | undefined): Series => ({
    name,
    points: points.flatMap((p) => {
      const v = pick(p);
      return v === undefined ? [] : [[p.at, v] as [number, number]];
    }),
  });
  return (
    <main class="metrics">
      <h1>Metrics</h1>
      <p class="hint">From /metrics every {POLL_MS / 1000} s; time to first token over each interval.</p>
      <ErrorNotice error={error} />
      <div class="charts">
        <LineChart
          title="Tokens generated per second"
          unit="tokens/s"
          series={[series('tokens/s', (p) => p.tokensPerSecond)]}
        />
        <LineChart
          title="Requests"
          unit="requests"
          series={[series('running', (p) => p.running), series('queued', (p) => p.queued)]}
        />
        <LineChart
          title="Time to first token"
          unit="s"
          series={[series('p50', (p) => p.ttftP50), series('p95', (p) => p.ttftP95)]}
        />
      </div>
    </main>
  );
}
