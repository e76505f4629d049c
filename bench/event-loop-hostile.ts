/**
 * The event-loop section's hostile run (issue 32 item 2): the daemon's own event-loop delay
 * (`llamad_event_loop_delay_seconds`, scraped every 2 s) while 4 benign streams run, first with nothing else going on
 * (the baseline), then while the hostile suite's requests (test/utils/hostile-cases.ts, the same as
 * test/e2e/event-loop-hostile.test.ts) go one after another. Same daemon set-up as the test: a child process, API
 * keys, one decode thread per model.
 */
import { acceptable, HOSTILE_CASES, type HostileModels } from '../test/utils/hostile-cases';
import {
  BENIGN_MODEL,
  BenignStreams,
  createHostileModels,
  HOSTILE_SUITE_WINDOW_MS,
  Poller,
  startDaemonProcess,
  summarizeEventLoop,
} from '../test/utils/hostile-load';

/** Bound on one hostile case, ms (as in the test). */
const CASE_TIMEOUT_MS = 15_000;
/** Length of the baseline phase (benign streams only), ms. */
const BASELINE_MS = 10_000;

/** Event-loop delay of one phase, ms: the median scraped p50, the largest scraped p99 and max. */
export interface LoopDelayFigures {
  p50: number;
  p99: number;
  max: number;
  scrapes: number;
}

/** What {@link hostileEventLoop} measured. */
export interface HostileEventLoopResult {
  baseline: LoopDelayFigures;
  hostile: LoopDelayFigures;
  /** Cases whose answer was not a 4xx or a completed 2xx within the bound: `name: status`. */
  failedCases: string[];
  /** Longest gap between chunks of a benign stream during the hostile phase, ms. */
  longestGapMs: number;
  /** How long the hostile phase took, ms. */
  hostileMs: number;
}

const MODELS: HostileModels = { victim: 'tiny-victim', tools: 'tiny-tools' };

function figures(polls: Poller['polls']): LoopDelayFigures {
  const s = summarizeEventLoop(polls);
  return { p50: s.p50 * 1000, p99: s.p99 * 1000, max: s.max * 1000, scrapes: s.scrapes };
}

/**
 * Runs the baseline and the hostile phase on a fresh daemon (models from test/fixtures/models, which must exist).
 * Each phase has its own daemon so the baseline's 30-60 s quantile window holds no hostile request.
 * @param log progress lines
 */
export async function hostileEventLoop(log: (line: string) => void): Promise<HostileEventLoopResult> {
  const baseline = await phase(log, false);
  const hostile = await phase(log, true);
  return { ...hostile, baseline: baseline.figures, hostile: hostile.figures };
}

async function phase(
  log: (line: string) => void,
  withHostile: boolean,
): Promise<{ figures: LoopDelayFigures; failedCases: string[]; longestGapMs: number; hostileMs: number }> {
  const daemon = await startDaemonProcess();
  try {
    await createHostileModels(daemon, MODELS);
    const streams = new BenignStreams(daemon, BENIGN_MODEL);
    await streams.start(4);
    await new Promise((r) => setTimeout(r, HOSTILE_SUITE_WINDOW_MS)); // the set-up leaves the quantile window
    const metrics = new Poller(`${daemon.base}/metrics`, daemon.auth, 2000, 5000, true);
    const failedCases: string[] = [];
    const from = performance.now();
    try {
      if (!withHostile) await new Promise((r) => setTimeout(r, BASELINE_MS));
      for (const hostile of withHostile ? HOSTILE_CASES : []) {
        let status: number | string;
        const started = performance.now();
        try {
          status = await hostile.run(daemon, MODELS, AbortSignal.timeout(CASE_TIMEOUT_MS));
        } catch (err) {
          status = `no answer (${(err as Error).message})`;
        }
        log(`event loop, hostile: ${hostile.name} → ${status} in ${(performance.now() - started).toFixed(0)} ms`);
        if (typeof status !== 'number' || !acceptable(status)) failedCases.push(`${hostile.name}: ${status}`);
      }
      await new Promise((r) => setTimeout(r, 2100)); // one more scrape after the last request
    } finally {
      await streams.stop();
      await metrics.stop();
    }
    const to = performance.now();
    return {
      figures: figures(metrics.polls),
      failedCases,
      longestGapMs: streams.longestGapIn(from, to),
      hostileMs: to - from,
    };
  } finally {
    await daemon.stop();
  }
}
