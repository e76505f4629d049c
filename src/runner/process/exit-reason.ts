/*
 * Why a runner process ended, in Ollama's words (reference/ollama-api.md §13.2: the runner's last error line, else
 * Go's exec.ExitError text), and a low-cardinality cause for the crash metric.
 */

/** How many stderr lines of a runner are kept for the exit message. */
export const STDERR_RING_LINES = 50;

/** Low-cardinality cause of a runner's death (metric label `cause`). */
export type RunnerCrashCause = 'abort' | 'signal' | 'exit' | 'oom';

/** Go's syscall.Signal strings for the signals a runner may die of (exec.ExitError: `signal: <name>`). */
const GO_SIGNAL_NAMES: Record<string, string> = {
  SIGABRT: 'aborted',
  SIGKILL: 'killed',
  SIGSEGV: 'segmentation fault',
  SIGBUS: 'bus error',
  SIGILL: 'illegal instruction',
  SIGFPE: 'floating point exception',
  SIGTERM: 'terminated',
  SIGINT: 'interrupt',
  SIGHUP: 'hangup',
  SIGPIPE: 'broken pipe',
  SIGTRAP: 'trace/breakpoint trap',
};

/** Prefixes of the lines Ollama's StatusWriter keeps as the runner's error (the text from the prefix on). */
export const ERROR_MARKERS = [
  'GGML_ASSERT',
  'error:',
  'CUDA error',
  'ROCm error',
  'cudaMalloc failed',
  'error loading model',
  'terminate called',
];

/**
 * Lines that say nothing about the failure: blank ones, backtrace frames and what ggml's backtrace printer (gdb/lldb
 * attach attempts) writes after an abort.
 */
const NOISE = [
  /^\s*$/,
  /^\s*#\d+\s/, // gdb/libunwind frames
  /^\s*\S*\(\+0x[0-9a-f]+\)/i, // backtrace_symbols frames: lib.so(+0x1234) [0x…]
  /^\s*\S+\((\S+)?\+0x[0-9a-f]+\)\s*\[0x[0-9a-f]+\]/i,
  /^\s*\[0x[0-9a-f]+\]/i,
  /ptrace|gdb|lldb|\[New LWP|\[Thread debugging|Using host libthread_db|Attaching to|Detaching from|warning:/i,
  /^\s*(?:Could not attach|No stack|Operation not permitted|\(No debugging symbols)/i,
];

/** Keeps the last lines written to a runner's stderr (partial lines are joined across chunks). */
export class StderrRing {
  private readonly lines: string[] = [];
  private partial = '';

  constructor(private readonly capacity = STDERR_RING_LINES) {}

  /** Adds a chunk; returns the complete lines it finished (for logging). */
  push(chunk: string): string[] {
    const parts = (this.partial + chunk).split(/\r?\n/);
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.keep(line);
    return parts;
  }

  /** Flushes an unterminated last line (the stream ended); returns it when there was one. */
  end(): string | undefined {
    const last = this.partial;
    this.partial = '';
    if (last === '') return undefined;
    this.keep(last);
    return last;
  }

  /** The kept lines, oldest first. */
  snapshot(): string[] {
    return [...this.lines];
  }

  private keep(line: string): void {
    this.lines.push(line.length > 1000 ? line.slice(0, 1000) : line);
    if (this.lines.length > this.capacity) this.lines.shift();
  }
}

/**
 * The runner's error line as Ollama reports it: the last line carrying an error marker (`GGML_ASSERT…`, `error:…`),
 * from the marker on; else the last line that is not noise (blank, backtrace, debugger chatter); else undefined.
 */
export function lastMeaningfulLine(lines: readonly string[]): string | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i];
    for (const marker of ERROR_MARKERS) {
      const at = line.indexOf(marker);
      if (at >= 0) return line.slice(at).trim();
    }
  }
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i];
    if (!NOISE.some((re) => re.test(line))) return line.trim();
  }
  return undefined;
}

/** Go's exec.ExitError text: `exit status N` or `signal: <name>` (e.g. `signal: aborted`). */
export function goExitText(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal) return `signal: ${GO_SIGNAL_NAMES[signal] ?? signal}`;
  return `exit status ${code ?? 0}`;
}

/**
 * Classifies a death for the crash metric: `oom` when the kernel's OOM killer killed it (`oomKilled`: a SIGKILL while
 * the cgroup's `memory.events` oom_kill counter rose, see OomKillCounter) or when stderr shows an allocation failure
 * (std::bad_alloc, "out of memory"), `abort` for SIGABRT (GGML_ASSERT, std::terminate), `signal` for any other signal
 * (a `kill -9` included), `exit` for an exit status.
 */
export function crashCause(
  code: number | null,
  signal: NodeJS.Signals | null,
  lines: readonly string[],
  oomKilled = false,
): RunnerCrashCause {
  if (oomKilled && signal === 'SIGKILL') return 'oom';
  if (lines.some((l) => /std::bad_alloc|out of memory|cannot allocate memory/i.test(l))) return 'oom';
  if (signal === 'SIGABRT') return 'abort';
  if (signal) return 'signal';
  return 'exit';
}

/**
 * The line ggml's CPU probe logs when an extension CPUID advertises traps (vendor/patches/0002, docs/native.md "CPU
 * probe"): `cpu: <FEATURE> advertised by CPUID but its first instruction traps (SIGILL): …`.
 */
const CPU_PROBE_LINE = /cpu: (\S+) advertised by CPUID but its first instruction traps/;

/** The CPU feature that ggml's probe found trapping (e.g. `AMX`, `AVX512F`): the last probe line, else undefined. */
export function trappedCpuFeature(lines: readonly string[]): string | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const match = CPU_PROBE_LINE.exec(lines[i]);
    if (match) return match[1];
  }
  return undefined;
}

/** Go's text for SIGILL, with the CPU feature that failed when it is known: `signal: illegal instruction (CPU feature AMX)`. */
export function illegalInstructionReason(feature: string | undefined): string {
  const text = goExitText(null, 'SIGILL');
  return feature ? `${text} (CPU feature ${feature})` : text;
}

/** Whether a RunnerTerminatedError's reason reports a death by SIGILL (illegalInstructionReason's text). */
export function isIllegalInstruction(reason: string): boolean {
  return reason.startsWith(goExitText(null, 'SIGILL'));
}

/** The CPU feature named in an illegalInstructionReason text, else undefined. */
export function featureOfReason(reason: string): string | undefined {
  return /\(CPU feature (\S+)\)$/.exec(reason)?.[1];
}

/**
 * The reason of a RunnerTerminatedError: for SIGILL, Go's text with the CPU feature ggml's probe named on stderr
 * (illegalInstructionReason; the probe's own line would otherwise be taken for the error); else the last meaningful
 * stderr line, else Go's exit text.
 */
export function exitReason(code: number | null, signal: NodeJS.Signals | null, lines: readonly string[]): string {
  if (signal === 'SIGILL') return illegalInstructionReason(trappedCpuFeature(lines));
  return lastMeaningfulLine(lines) ?? goExitText(code, signal);
}
