/*
 * The daemon's watchdogs over a runner process (docs/architecture.md "Watchdogs"; issue 32 item 5): the load stall
 * timer (OLLAMA_LOAD_TIMEOUT) and the engine progress watchdog (LLAMAD_RUNNER_HEARTBEAT_TIMEOUT). Pure timers: the
 * ProcessRunner tells them what happened and kills the process when they fire.
 */

/** The batch size one heartbeat timeout covers, tokens: a step of num_batch tokens gets ceil(num_batch / 512) × it. */
export const HEARTBEAT_BATCH_TOKENS = 512;
/** Sequences per embedding batch at most (native/engine_embed.cpp: max(nParallel, 64)). */
const EMBED_SEQUENCES_PER_BATCH = 64;

/**
 * How often a runner process sends its heartbeat, and how often the daemon checks, ms: a quarter of the timeout,
 * between 50 ms and 1 s; 0 when the watchdog is off (`timeoutMs` Infinity).
 */
export function heartbeatIntervalMs(timeoutMs: number): number {
  if (!Number.isFinite(timeoutMs)) return 0;
  return Math.max(50, Math.min(1000, Math.floor(timeoutMs / 4)));
}

/**
 * Ollama's load timeout error (llm/server.go WaitUntilRunning: `timed out waiting for llama runner to start - progress
 * %0.2f - %s`, the runner's last error line or ''; reference/ollama-api.md §13.2), answered with 500.
 * @param progress load progress in [0, 1] at the time the timer fired
 */
export function loadTimeoutMessage(progress: number, lastError: string | undefined): string {
  return `timed out waiting for llama runner to start - progress ${progress.toFixed(2)} - ${lastError ?? ''}`;
}

/**
 * A stall timer (Ollama's stallTimer of WaitUntilRunning): fires `onStall` once when `timeoutMs` pass without a call of
 * {@link progress} with a value different from the last one. Infinity never fires. `stop()` disarms it.
 */
export class StallTimer {
  private timer: NodeJS.Timeout | undefined;
  private last = -1;
  private stopped = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly onStall: () => void,
  ) {
    this.arm();
  }

  /** The latest progress value (load progress in [0, 1]); a new value re-arms the timer. */
  progress(value: number): void {
    if (value === this.last) return;
    this.last = value;
    this.arm();
  }

  /** The last progress value seen (0 before any). */
  get value(): number {
    return Math.max(0, this.last);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.stopped || !Number.isFinite(this.timeoutMs)) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped) this.onStall();
    }, this.timeoutMs);
    this.timer.unref?.();
  }
}

/** What the progress watchdog asks its runner at every check. */
export interface RunnerWork {
  /** Generations and embed jobs in flight (engine work). */
  engineJobs: number;
  /**
   * Steps the slowest engine job in flight may take between two signs of progress: 1 for generations (each step is
   * one llama_decode), the batches of the largest embed job in flight (an embed job reports nothing until it ends).
   */
  steps: number;
  /** When the oldest other call in flight (tokenize, detokenize, template) was sent, ms since the epoch. */
  oldestCallAt?: number;
}

/**
 * The engine progress watchdog of one runner process: kills when work is pending and the engine shows no progress for
 * `timeoutMs` × ceil(num_batch / 512) × {@link RunnerWork.steps}. Progress is a new value of the child's engine
 * counter (decode steps, sent with every heartbeat), a generation event, or the end of an embed job — never the child's
 * event loop alone, so an engine thread stuck in a kernel (the child's JS loop free and heartbeating) is caught. Calls
 * that are not engine work (tokenize, templates: the libuv pool) fire when one is pending for `timeoutMs`. Idle time
 * never counts. Checks every {@link heartbeatIntervalMs}; `onStall(idleMs)` is called once.
 */
export class ProgressWatchdog {
  private lastProgressAt: number;
  private lastCounter: number | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  private fired = false;

  constructor(
    private readonly options: {
      timeoutMs: number;
      numBatch: number;
      work: () => RunnerWork;
      onStall: (idleMs: number) => void;
      now?: () => number;
    },
  ) {
    this.lastProgressAt = this.now();
    const every = heartbeatIntervalMs(options.timeoutMs);
    if (every > 0) {
      this.timer = setInterval(() => this.check(), every);
      this.timer.unref?.();
    }
  }

  /** A heartbeat with the child's engine progress counter. */
  heartbeat(counter: number): void {
    if (counter !== this.lastCounter) {
      this.lastCounter = counter;
      this.progress();
    }
  }

  /** The engine showed progress (an event, an embed result, a new counter value). */
  progress(): void {
    this.lastProgressAt = this.now();
  }

  /** Checks now (the timer calls it); exposed for tests. */
  check(): void {
    if (this.fired) return;
    const now = this.now();
    const work = this.options.work();
    const perStep = this.options.timeoutMs * Math.max(1, Math.ceil(this.options.numBatch / HEARTBEAT_BATCH_TOKENS));
    if (work.engineJobs === 0) this.lastProgressAt = now;
    else if (now - this.lastProgressAt > perStep * Math.max(1, work.steps)) {
      return this.fire(now - this.lastProgressAt);
    }
    if (work.oldestCallAt !== undefined && now - work.oldestCallAt > this.options.timeoutMs) {
      this.fire(now - work.oldestCallAt);
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private fire(idleMs: number): void {
    this.fired = true;
    this.stop();
    this.options.onStall(idleMs);
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

/**
 * Batches an embed job of these inputs needs at most (each batch holds up to `batchTokens` tokens and 64 sequences):
 * the steps its silence may last (RunnerWork.steps).
 */
export function embedBatches(inputs: number[][], batchTokens: number): number {
  let tokens = 0;
  for (const input of inputs) tokens += input.length;
  return Math.max(
    1,
    Math.ceil(tokens / Math.max(1, batchTokens)),
    Math.ceil(inputs.length / EMBED_SEQUENCES_PER_BATCH),
  );
}

/** `the runner stopped responding: …`, the reason of the RunnerTerminatedError of a runner the watchdog killed. */
export function stallReason(idleMs: number, engineJobs: number): string {
  const seconds = Math.round(idleMs / 100) / 10;
  const work = engineJobs === 1 ? '1 request' : `${engineJobs} requests`;
  return `the runner stopped responding (no progress for ${seconds} s with ${work} in flight) and was killed`;
}
