/**
 * The runner process (docs/architecture.md "Runner processes"): started by ProcessRunner with child_process.fork and
 * the IPC channel (`serialization: 'advanced'`), it loads the native addon and ONE model (a LlamaRunner) and serves
 * the Runner calls of protocol.ts. A llama.cpp abort (GGML_ASSERT) or a crash here ends this process only; the daemon
 * reports it to the requests in flight on this model.
 *
 * - Generation events are batched per tick: every event of the current turn of the event loop is sent in one
 *   message on setImmediate, with a usage snapshot; a task that ended in the engine (finished, failed or cancelled)
 *   sends one too, so the parent's usage() (slots busy, queue, KV cells) is exact once the engine freed the slot.
 * - Load progress is forwarded (`loadProgress`, at most once per 1 %) for the daemon's load timer; once loaded, a
 *   `heartbeat` with the engine's decode-step counter goes out every `heartbeatMs` for its progress watchdog.
 * - Test hook (load message `fault`, from LLAMAD_TEST_RUNNER_FAULT): `load-hang` never answers the load; `stall`
 *   forwards a generation's first event and then nothing more, with a frozen progress counter (a stuck engine).
 * - The process exits at once when its parent goes away (IPC 'disconnect'; a ppid check every second as a fallback),
 *   so a daemon killed with SIGKILL leaves no runner behind. SIGINT, SIGTERM and SIGHUP are ignored: the daemon
 *   decides when its runners end (after draining on its own SIGTERM).
 * - A generation whose request carries a `traceparent` gets this process's times on its `done` event (tracedWork).
 * Imports only runner/, native/, common/ and the tracing report type (never Nest modules of higher layers).
 */
import type { Subscription } from 'rxjs';
import type { NativeBinding } from '../../../binding';
import type { RunnerFault } from '../../config';
import { ModelLoadError } from '../../common/errors';
import { loadBinding } from '../../native';
import type { AddonCandidate } from '../../native/addon-candidates';
import { epochMs, type RunnerWorkReport } from '../../observability/tracing/runner-report';
import { machinePhysicalCores } from '../cpu-threads';
import { LlamaRunner } from '../llama.runner';
import type { RunnerEvent } from '../runner';
import type { ChildMessage, GenerationRecord, ParentMessage, RunnerCall, RunnerSnapshot } from './protocol';
import { toWireError } from './protocol';

/** Usage before a model is loaded. */
const IDLE_USAGE = { slotsBusy: 0, queuedTasks: 0, kvCellsTotal: 0, kvCellsUsed: 0 };
/** How often the child checks that its parent is still alive, ms (fallback to 'disconnect'). */
const PARENT_CHECK_MS = 1000;

/** Ends the process now, without running exit handlers (the OS frees the model; engine threads are not joined). */
function dieNow(): never {
  process.kill(process.pid, 'SIGKILL');
  process.exit(1);
}

/**
 * Test hook (docs/native.md "CPU probe"): LLAMAD_TEST_RUNNER_SIGILL makes this process die of a real SIGILL right
 * after the model loaded, as the first AMX instruction kills a runner on a CPU that lies about AMX: `extra-bufts` only
 * when the model was loaded with the CPU backend's extra buffer types (the daemon's retry without them then works),
 * `always` on every load. Unset (production): nothing.
 */
function testSigillAtLoad(extraBufferTypes: boolean): boolean {
  const mode = process.env.LLAMAD_TEST_RUNNER_SIGILL;
  if (mode !== 'always' && !(mode === 'extra-bufts' && extraBufferTypes)) return false;
  process.stderr.write(`runner-child: LLAMAD_TEST_RUNNER_SIGILL=${mode}: raising SIGILL\n`);
  process.kill(process.pid, 'SIGILL');
  return true;
}

/**
 * For a traced generation (a `traceparent` in its request): a function that notes when the first token came and adds
 * this process's report of the work ({@link RunnerWorkReport}: pid, when the message came, first token, end; epoch
 * ms) to the `done` event, which the daemon records as spans under that traceparent (observability/tracing). No
 * OpenTelemetry SDK runs in a runner process: one killed mid-way loses no buffered spans, a host application's tracer
 * provider (in the daemon's process only) records them too, and the sampling decision is the daemon's. Untraced:
 * undefined, nothing is measured.
 */
function tracedWork(traceparent: string | undefined): ((event: RunnerEvent) => RunnerEvent) | undefined {
  if (!traceparent) return undefined;
  const receivedAt = epochMs();
  let firstTokenAt: number | undefined;
  return (event) => {
    if (event.kind === 'token') {
      firstTokenAt ??= epochMs();
      return event;
    }
    const runner: RunnerWorkReport = { traceparent, pid: process.pid, receivedAt, endedAt: epochMs() };
    if (firstTokenAt !== undefined) runner.firstTokenAt = firstTokenAt;
    return { ...event, runner };
  };
}

/** Serves one runner over the IPC channel until told to close or the parent goes away. */
class RunnerChild {
  private runner: LlamaRunner | undefined;
  private readonly generations = new Map<number, Subscription>();
  private readonly embeds = new Map<number, AbortController>();
  private batch: GenerationRecord[] = [];
  private flushScheduled = false;
  private fault: RunnerFault | undefined;
  /** With the `stall` fault: the progress counter frozen at the first event; nothing is forwarded after it. */
  private stalledAt: number | undefined;

  constructor(
    private readonly send: (message: ChildMessage) => void,
    private readonly binding: (addon?: AddonCandidate) => NativeBinding,
  ) {}

  handle(message: ParentMessage): void {
    switch (message.t) {
      case 'load':
        this.fault = message.fault;
        // The `load-hang` test fault: a load that never finishes (the daemon's load timer must kill this process).
        if (message.fault !== 'load-hang') {
          void this.load(message, message.extraBufferTypes !== false);
        }
        break;
      case 'threads':
        this.runner?.setThreads(message.threads);
        break;
      case 'generate':
        this.generate(message.id, message);
        break;
      case 'call':
        void this.call(message.id, message);
        break;
      case 'cancel':
        this.cancel(message.id);
        break;
      case 'close':
        void this.close();
        break;
    }
  }

  private snapshot(): RunnerSnapshot {
    const runner = this.runner;
    if (!runner) {
      return { usage: IDLE_USAGE, memory: { totalBytes: 0, vramBytes: 0, devices: [] } };
    }
    const broken = runner.broken();
    return { usage: runner.usage(), memory: runner.memory(), ...(broken ? { broken } : {}) };
  }

  private async load(message: Extract<ParentMessage, { t: 'load' }>, extraBufferTypes: boolean): Promise<void> {
    const { spec, threads, heartbeatMs } = message;
    try {
      let binding: NativeBinding;
      try {
        binding = this.binding(message.addon);
      } catch (err) {
        throw new ModelLoadError((err as Error).message, { cause: err });
      }
      let sent = -1;
      const onProgress = (progress: number) => {
        if (progress - sent < 0.01 && progress < 1) return;
        sent = progress;
        this.send({ t: 'loadProgress', progress });
      };
      const runner = await LlamaRunner.load(binding, spec, threads, onProgress, extraBufferTypes);
      if (testSigillAtLoad(extraBufferTypes)) return;
      this.runner = runner;
      if (heartbeatMs) setInterval(() => this.send({ t: 'heartbeat', progress: this.progress() }), heartbeatMs).unref();
      // A task that ended (a cancelled one too) freed its slot: the parent's usage() must not keep showing it busy.
      runner.onTaskEnd(() => this.scheduleFlush());
      let capabilities = { tools: false, thinking: false };
      try {
        capabilities = runner.chatCapabilities();
      } catch {
        // a template the caps probe rejects: rendering reports the error later
      }
      this.send({
        t: 'loaded',
        info: runner.info,
        slotContext: runner.slotContext,
        capabilities,
        snapshot: this.snapshot(),
      });
    } catch (err) {
      this.send({ t: 'loadFailed', error: toWireError(err) });
    }
  }

  /** The engine's progress counter: decode steps of the generation context (frozen by the `stall` fault). */
  private progress(): number {
    return this.stalledAt ?? this.runner?.usage().decodeSteps ?? 0;
  }

  private generate(id: number, message: Extract<ParentMessage, { t: 'generate' }>): void {
    const runner = this.runner;
    if (!runner) {
      this.push({ id, error: { name: 'InternalError', message: 'the runner is not loaded' } });
      return;
    }
    const report = tracedWork(message.request.traceparent);
    const subscription = runner.generate(message.request).subscribe({
      next: (event) => {
        if (this.stalledAt !== undefined) return;
        if (report) event = report(event);
        this.push({ id, event });
        if (this.fault === 'stall') this.stalledAt = this.progress();
      },
      error: (err: unknown) => {
        this.generations.delete(id);
        if (this.stalledAt === undefined) this.push({ id, error: toWireError(err) });
      },
      complete: () => this.generations.delete(id),
    });
    if (!subscription.closed) this.generations.set(id, subscription);
  }

  private async call(id: number, message: { t: 'call'; id: number } & RunnerCall): Promise<void> {
    const runner = this.runner;
    try {
      if (!runner) throw new Error('the runner is not loaded');
      let value: unknown;
      switch (message.method) {
        case 'tokenize':
          value = await runner.tokenize(...message.args);
          break;
        case 'detokenize':
          value = await runner.detokenize(...message.args);
          break;
        case 'applyChatTemplate':
          value = await runner.applyChatTemplate(...message.args);
          break;
        case 'jsonSchemaToGrammar': {
          const abort = new AbortController(); // a `cancel` drops the conversion while it waits for the worker
          this.embeds.set(id, abort);
          try {
            value = await runner.jsonSchemaToGrammar(message.args[0], abort.signal);
          } finally {
            this.embeds.delete(id);
          }
          break;
        }
        case 'embed': {
          const abort = new AbortController();
          this.embeds.set(id, abort);
          try {
            value = await runner.embed(message.args[0], abort.signal);
          } finally {
            this.embeds.delete(id);
          }
          break;
        }
      }
      if (this.stalledAt !== undefined && message.method === 'embed') return; // a stalled engine ends no job
      this.send({ t: 'result', id, value, snapshot: this.snapshot() });
    } catch (err) {
      this.send({ t: 'result', id, error: toWireError(err), snapshot: this.snapshot() });
    }
  }

  private cancel(id: number): void {
    const generation = this.generations.get(id);
    if (generation) {
      this.generations.delete(id);
      generation.unsubscribe();
      // Usage now (the cells this generation held are given back); the engine frees the slot within one decode step,
      // and onTaskEnd sends the usage again then.
      this.scheduleFlush();
    }
    this.embeds.get(id)?.abort();
  }

  private async close(): Promise<void> {
    for (const generation of this.generations.values()) generation.unsubscribe();
    this.generations.clear();
    for (const abort of this.embeds.values()) abort.abort();
    try {
      await this.runner?.close();
    } finally {
      process.exit(0);
    }
  }

  /** Queues one record for this tick's batch. */
  private push(record: GenerationRecord): void {
    this.batch.push(record);
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const batch = this.batch;
      this.batch = [];
      const broken = this.runner?.broken();
      this.send({ t: 'events', batch, usage: this.runner?.usage() ?? IDLE_USAGE, ...(broken ? { broken } : {}) });
    });
  }
}

/**
 * Serves one runner over this process's IPC channel (the body of the runner process). `binding` loads the addon:
 * in production exactly the file of the load message's `addon` (the daemon's choice; a prebuilt package of another
 * llamad version fails the load with ModelLoadError), else the one its own search finds; tests start a child that
 * passes a fake. Exits with status 2 when the process
 * has no IPC channel.
 */
export function serveRunner(binding: (addon?: AddonCandidate) => NativeBinding = loadBinding): void {
  if (!process.send || !process.connected) {
    process.stderr.write('runner-child: must be started by the daemon (child_process.fork with an IPC channel)\n');
    process.exit(2);
  }
  // The CPU topology (sysfs, synchronous, remembered): read now, before any message, not during a load.
  machinePhysicalCores();
  const parent = process.ppid;
  process.on('disconnect', dieNow);
  // The daemon owns its runners' lifetime: a Ctrl-C in the terminal (SIGINT to the whole process group) or a service
  // manager's SIGTERM to the whole cgroup must not end a runner while the daemon drains its streams; the runner ends
  // on `close` or when the daemon goes away (disconnect).
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => undefined);
  setInterval(() => {
    if (process.ppid !== parent) dieNow();
  }, PARENT_CHECK_MS).unref();
  const child = new RunnerChild((message) => {
    if (process.connected) process.send?.(message);
  }, binding);
  process.on('message', (message: ParentMessage) => child.handle(message));
}

if (require.main === module) serveRunner();
