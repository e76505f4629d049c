import { parseGoDuration } from '../common/time';

/*
 * The watchdog settings of the daemon's environment (issue 32 item 5): OLLAMA_LOAD_TIMEOUT, the runner heartbeat
 * timeout and the runner fault hook of the tests. Parsed by loadConfig (daemon-config.ts) into DaemonConfig.
 */

/** OLLAMA_LOAD_TIMEOUT when unset: 5 minutes without load progress (reference/ollama-api.md §7.6, §13.2). */
export const DEFAULT_LOAD_TIMEOUT_MS = 5 * 60 * 1000;

/**
 * LLAMAD_RUNNER_HEARTBEAT_TIMEOUT when unset: 5 minutes without engine progress, per step of up to 512 batch tokens.
 * A step is one llama_decode of at most num_batch tokens; the slowest legitimate one we plan for is a 512-token
 * prompt batch of a 70B model on a weak CPU (about 2 tokens/s of prompt evaluation: ~256 s). Larger num_batch values
 * scale the allowance (see RunnerWatchdogOptions in src/runner/process/watchdog.ts).
 */
export const DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS = 5 * 60 * 1000;

/**
 * Test hook faults a runner process can be told to simulate (LLAMAD_TEST_RUNNER_FAULT, see {@link parseRunnerFaults}):
 * - `load-hang`: the load never finishes (the child never answers the load message);
 * - `stall`: after the first generation event the engine "stops progressing": the child keeps its event loop and its
 *   heartbeats alive but forwards no more events and reports a frozen progress counter (a decode thread stuck in a
 *   kernel looks exactly like this from the daemon).
 */
export type RunnerFault = 'load-hang' | 'stall';

const FAULTS: readonly RunnerFault[] = ['load-hang', 'stall'];

/**
 * Ollama's envconfig.LoadTimeout: a Go duration (`90s`, `10m`) or an integer number of seconds; ≤ 0 = no timeout
 * (Infinity); empty or unparsable = the 5 minute default.
 * @returns milliseconds, or Infinity.
 */
export function parseLoadTimeoutEnv(raw: string): number {
  return parseTimeoutEnv(raw, DEFAULT_LOAD_TIMEOUT_MS);
}

/**
 * LLAMAD_RUNNER_HEARTBEAT_TIMEOUT: the same syntax as OLLAMA_LOAD_TIMEOUT (Go duration or integer seconds; ≤ 0 = the
 * watchdog is off: Infinity; empty or unparsable = {@link DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS}).
 * @returns milliseconds, or Infinity.
 */
export function parseHeartbeatTimeoutEnv(raw: string): number {
  return parseTimeoutEnv(raw, DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS);
}

function parseTimeoutEnv(raw: string, fallback: number): number {
  if (raw === '') return fallback;
  let ms: number;
  try {
    ms = parseGoDuration(raw) / 1e6;
  } catch {
    if (!/^[-+]?\d+$/.test(raw)) return fallback;
    ms = Number(raw) * 1000;
  }
  return ms > 0 ? ms : Infinity;
}

/**
 * LLAMAD_TEST_RUNNER_FAULT (a test hook, beyond Ollama; never set it in production): comma-separated `model=fault`
 * pairs, `model` being the name a runner is loaded for (`stuck:latest`, as the scheduler labels it) and `fault` one
 * of {@link RunnerFault}; the first runner process started for that model simulates it, later ones run normally.
 * Entries without `=` or with an unknown fault are dropped.
 * @returns model name → fault.
 */
export function parseRunnerFaults(raw: string): Record<string, RunnerFault> {
  const faults: Record<string, RunnerFault> = {};
  for (const entry of raw.split(',')) {
    const at = entry.lastIndexOf('=');
    if (at <= 0) continue;
    const model = entry.slice(0, at).trim();
    const fault = FAULTS.find((f) => f === entry.slice(at + 1).trim());
    if (model !== '' && fault) faults[model] = fault;
  }
  return faults;
}
