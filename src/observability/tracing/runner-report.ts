/*
 * What crosses the runner process boundary for tracing (no OpenTelemetry import: runner processes load this file, and
 * no SDK, see runner/process/runner-child.ts tracedWork).
 */

/**
 * What a runner process reports about its side of one traced generation (protocol.ts, the `done` event's `runner`),
 * so that the daemon records it under the span the `traceparent` names. Times are epoch milliseconds (fractional:
 * `performance.timeOrigin + performance.now()` in the runner process; both processes read the same system clock).
 */
export interface RunnerWorkReport {
  /** The W3C `traceparent` the daemon sent in the generate message, echoed. */
  traceparent: string;
  /** The runner process's pid. */
  pid: number;
  /** When the runner process received the generate message. */
  receivedAt: number;
  /** When its first token came out of the engine; absent when none came. */
  firstTokenAt?: number;
  /** When the engine's `done` event came. */
  endedAt: number;
}

/** Epoch milliseconds now, sub-millisecond (the clock spans and runner reports use). */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}
