import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { acceptable, HOSTILE_CASES, HostileModels } from '../utils/hostile-cases';
import {
  BENIGN_MODEL,
  BenignStreams,
  createHostileModels,
  DaemonProcess,
  HOSTILE_SUITE_WINDOW_MS,
  Poller,
  startDaemonProcess,
  summarizeEventLoop,
} from '../utils/hostile-load';
import { ensureTestModels } from '../utils/models';
import { realAddon } from '../utils/real-addon';

const addon = realAddon();

/** Issue 32 item 2's thresholds. */
const P99_LIMIT_S = 0.05;
const GAP_LIMIT_MS = 250;
/** A poll of /api/version slower than this counts as "not answering". */
const VERSION_LIMIT_MS = 1000;
/** Bound on one hostile case (a daemon that freezes fails the case here, not the suite's own timeout). */
const CASE_TIMEOUT_MS = 15_000;
const BENIGN_STREAMS = 4;

const MODELS: HostileModels = { victim: 'tiny-victim', tools: 'tiny-tools' };

// Issue 32 item 2: the event-loop guarantee, measured. The daemon runs in a child process (node dist/src/main.js),
// so its event loop is not the test's: the test process sends 50 MB bodies and builds multi-megabyte requests, which
// would count against an in-process daemon. The daemon's own loop is read from its llamad_event_loop_delay_seconds
// (LLAMAD_EVENT_LOOP_WINDOW=10s, scraped every 2 s from 10 s after the set-up: each scrape's quantiles cover the last
// 5-10 s, so the largest scraped p99 bounds every window of the run, and model imports of the set-up are not in it). While 4 benign streams run on one model (tiny-qwen2), the hostile requests go one after another to two
// other models (their runners may reload or die without touching the streams'). Every case: a 4xx, or a 2xx that
// completes, within 15 s; no benign stream has a gap over 250 ms meanwhile; /api/version answers meanwhile. At the
// end: the p99 stayed under 50 ms, and no scrape or poll failed.
describe(
  'event-loop guarantee under hostile requests (real addon, daemon in a child process)',
  { skip: addon.skip },
  () => {
    let daemon: DaemonProcess | undefined;
    let streams: BenignStreams;
    let version: Poller;
    let metrics: Poller;

    before(async () => {
      ensureTestModels();
      daemon = await startDaemonProcess();
      await createHostileModels(daemon, MODELS);
      streams = new BenignStreams(daemon, BENIGN_MODEL);
      await streams.start(BENIGN_STREAMS);
      version = new Poller(`${daemon.base}/api/version`, {}, 100, VERSION_LIMIT_MS * 3);
      // The set-up (model imports, loads) leaves the daemon's quantile window before the first scrape counts.
      await new Promise((r) => setTimeout(r, HOSTILE_SUITE_WINDOW_MS));
      metrics = new Poller(`${daemon.base}/metrics`, daemon.auth, 2000, 5000, true);
    });

    after(async () => {
      await streams?.stop();
      await version?.stop();
      await metrics?.stop();
      await daemon?.stop();
    });

    for (const hostile of HOSTILE_CASES) {
      it(`${hostile.name}: ${hostile.expect}`, hostile.todo ? { todo: hostile.todo } : {}, async () => {
        const from = performance.now();
        let status: number | string;
        try {
          status = await hostile.run(daemon!, MODELS, AbortSignal.timeout(CASE_TIMEOUT_MS));
        } catch (err) {
          status = `no answer: ${(err as Error).message}`;
        }
        const to = performance.now();
        await new Promise((r) => setTimeout(r, 300)); // a gap spanning the end of the case ends after it
        const gap = streams.longestGapIn(from, to);
        const polls = version.during(from, to);
        const slowPolls = polls.filter((p) => !p.ok || p.ms > VERSION_LIMIT_MS);
        const report =
          `status ${status} after ${(to - from).toFixed(0)} ms; longest benign gap ${gap.toFixed(0)} ms; ` +
          `/api/version: ${slowPolls.length} of ${polls.length} polls failed or over ${VERSION_LIMIT_MS} ms`;
        assert.ok(typeof status === 'number' && acceptable(status), `not a 4xx or a completed 2xx: ${report}`);
        assert.ok(gap <= GAP_LIMIT_MS, `a benign stream stalled: ${report}`);
        assert.equal(slowPolls.length, 0, `/api/version did not answer throughout: ${report}`);
      });
    }

    it('over the whole run: p99 event-loop delay under 50 ms, streams and /api/version healthy', async () => {
      await new Promise((r) => setTimeout(r, 2100)); // one more scrape after the last case
      const loop = summarizeEventLoop(metrics.polls);
      const failedScrapes = metrics.polls.filter((p) => !p.ok).length;
      const report =
        `event loop (seconds, ${loop.scrapes} scrapes): p50 ${loop.p50}, largest p99 ${loop.p99}, max ${loop.max}; ` +
        `${failedScrapes} failed scrapes; ${streams.chunks} benign chunks; stream failures: ${streams.failures.length}`;
      // Written to the test's output for the record (bench/event-loop-hostile.ts reports the same figures).
      console.log(`event-loop-hostile: ${report}`);
      assert.ok(loop.scrapes > 0, report);
      assert.equal(failedScrapes, 0, report);
      assert.ok(loop.p99 < P99_LIMIT_S, report);
      assert.deepEqual(streams.failures, [], report);
      assert.ok(streams.chunks > 0, report);
    });
  },
);
