import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { Observable, Subscriber } from 'rxjs';
import type { NativeBinding, NativeModel } from '../../../binding';
import {
  DaemonError,
  InternalError,
  ModelLoadError,
  RequestCancelledError,
  RunnerTerminatedError,
} from '../../common/errors';
import { DEFAULT_LOAD_TIMEOUT_MS, DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS, RunnerFault } from '../../config';
import { mapNativeError } from '../../native';
import type { AddonCandidate } from '../../native/addon-candidates';
import type {
  Runner,
  RunnerChatMessage,
  RunnerChatRender,
  RunnerChatRequest,
  RunnerDeath,
  RunnerEvent,
  RunnerMemory,
  RunnerModelInfo,
  RunnerRequest,
  RunnerSpec,
  RunnerUsage,
} from '../runner';
import { crashCause, ERROR_MARKERS, exitReason, StderrRing } from './exit-reason';
import { OomKillCounter } from './oom-kills';
import {
  ChildMessage,
  fromWireError,
  GenerationRecord,
  ParentMessage,
  RunnerCall,
  RunnerSnapshot,
  WireError,
} from './protocol';
import {
  embedBatches,
  heartbeatIntervalMs,
  loadTimeoutMessage,
  ProgressWatchdog,
  RunnerWork,
  StallTimer,
  stallReason,
} from './watchdog';

/** The child entry, next to this file (dist/src/runner/process/runner-child.js in the package). */
export const RUNNER_CHILD_PATH = join(__dirname, 'runner-child.js');

/** How long close() waits for the runner process to exit before SIGKILL, ms. */
export const CLOSE_TIMEOUT_MS = 10_000;

/** Where and how to start one runner process. */
export interface ProcessRunnerOptions {
  /** The child entry script; default RUNNER_CHILD_PATH. Tests pass a fake child. */
  childPath?: string;
  /** Extra arguments of the child (after the model label). */
  childArgs?: string[];
  /** The label of log lines and of the child's command line (the model name, else the weights path). */
  label: string;
  /** The parent's own binding, for renderChat (a vocab-only model); loaded lazily. */
  binding: () => NativeBinding;
  /** Where the child's stderr/stdout lines go, one call per line. */
  log?: (line: string) => void;
  /** close(): how long to wait for the exit before SIGKILL, ms. */
  closeTimeoutMs?: number;
  /** Threads to load with when spec.numThread is 0 (RunnerCreateOptions.threads). */
  threads?: number;
  /**
   * OLLAMA_LOAD_TIMEOUT: the load fails (ModelLoadError with Ollama's text) and the process is killed when this many
   * ms pass without load progress; Infinity = never. Default DEFAULT_LOAD_TIMEOUT_MS (5 min).
   */
  loadTimeoutMs?: number;
  /**
   * LLAMAD_RUNNER_HEARTBEAT_TIMEOUT: the progress watchdog's timeout, ms (watchdog.ts ProgressWatchdog); Infinity =
   * off. Default DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS (5 min).
   */
  heartbeatTimeoutMs?: number;
  /** A fault the child simulates (LLAMAD_TEST_RUNNER_FAULT; tests only). */
  fault?: RunnerFault;
  /** Tells OOM kills from other SIGKILLs (the death's cause `oom`); absent: a SIGKILL is always `signal`. */
  oomKills?: OomKillCounter;
  /**
   * false: the child loads the model without the CPU backend's extra buffer types (AMX, repacked weights;
   * binding.d.ts NativeModelParams.useExtraBufferTypes). Default true.
   */
  extraBufferTypes?: boolean;
  /** The addon the child loads, exactly that file (the daemon's loadedAddon()); absent: the child searches itself. */
  addon?: AddonCandidate;
  /** Load progress in [0, 1] as the child reports it (RunnerCreateOptions.onProgress). */
  onProgress?: (progress: number) => void;
}

/** How a runner process ended: exit code or signal, its last stderr lines, and whether the OOM killer killed it. */
interface RunnerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  lines: string[];
  oomKilled: boolean;
}

interface PendingCall {
  method: RunnerCall['method'];
  /** When it was sent, ms since the epoch (the watchdog's age of a call that is not engine work). */
  sentAt: number;
  /** For an embed job: the batches it needs at most (watchdog.ts embedBatches). */
  steps?: number;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * The parent side of a runner process (docs/architecture.md "Runner processes"): a Runner whose model lives in a
 * child process (runner-child.ts) started with child_process.fork and `serialization: 'advanced'`.
 * - `info`, `slotContext`, `chatCapabilities()` come from the load handshake; `usage()`/`memory()` return the latest
 *   snapshot the child pushed (usage with every event batch; usage and memory after load and with every call result);
 * - generate(): one id per generation; events arrive batched per tick and are replayed in order; unsubscribing sends
 *   `cancel`; tokenize/detokenize/applyChatTemplate/embed are request/response messages (embed's AbortSignal sends
 *   `cancel`); errors cross as {name, message} and are rebuilt as the same domain error classes;
 * - jsonSchemaToGrammar() is a call too (the child converts in its grammar worker thread); renderChat() runs on a
 *   vocab-only copy of the model loaded in the parent (GGUF metadata and tokenizer only: no tensors, no decoding; the
 *   Jinja rendering on the libuv pool), because its result carries a synchronous output parser (a native object)
 *   that cannot cross a process boundary; after close() it refuses, and close() frees that copy;
 * - when the child dies on its own (abort, signal, OOM kill, exit) every generation and call in flight fails with
 *   RunnerTerminatedError (`llama runner process has terminated: <last meaningful stderr line>`), later calls fail
 *   the same way, and the onDeath listeners (the scheduler) run once;
 * - watchdogs (watchdog.ts, docs/architecture.md "Watchdogs"): a load without progress for `loadTimeoutMs` is killed
 *   and fails with Ollama's `timed out waiting for llama runner to start - progress …` (ModelLoadError, 500); a
 *   loaded runner with requests in flight whose engine shows no progress for `heartbeatTimeoutMs` (per 512-token step)
 *   is killed (SIGKILL) and its requests fail with RunnerTerminatedError `…the runner stopped responding (…)`, cause
 *   `hang`.
 */
export class ProcessRunner implements Runner {
  private readonly generations = new Map<number, Subscriber<RunnerEvent>>();
  private readonly calls = new Map<number, PendingCall>();
  private nextId = 1;
  private snapshot: RunnerSnapshot;
  private death: RunnerTerminatedError | undefined;
  private deathEvent: RunnerDeath | undefined;
  private readonly deathListeners: ((death: RunnerDeath) => void)[] = [];
  private closing: Promise<void> | undefined;
  private vocab: Promise<NativeModel> | undefined;
  /** Whether a generation produced output or an embed returned (a death before that is an early death). */
  private decoded = false;
  private readonly watchdog: ProgressWatchdog;
  /** Set when the watchdog killed the process: the reason of its death. */
  private hung: string | undefined;

  private constructor(
    readonly spec: RunnerSpec,
    readonly info: RunnerModelInfo,
    readonly slotContext: number,
    private readonly capabilities: { tools: boolean; thinking: boolean },
    snapshot: RunnerSnapshot,
    private readonly child: ChildProcess,
    private readonly options: ProcessRunnerOptions,
    /** Resolves with how the process ended. */
    private readonly exited: Promise<RunnerExit>,
  ) {
    this.snapshot = snapshot;
    this.watchdog = new ProgressWatchdog({
      timeoutMs: options.heartbeatTimeoutMs ?? DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS,
      numBatch: spec.numBatch,
      work: () => this.work(),
      onStall: (idleMs) => this.onStall(idleMs),
    });
    child.on('message', (message: ChildMessage) => this.onMessage(message));
    void exited.then((exit) => this.onExit(exit));
  }

  /**
   * Starts a runner process and loads `spec` in it.
   * @throws ModelLoadError / InsufficientMemoryError as the child's LlamaRunner.load raised them; ModelLoadError
   *   `timed out waiting for llama runner to start - progress 0.42 - ` after `loadTimeoutMs` without load progress
   *   (the process is killed first); RunnerTerminatedError when the process died while loading (e.g. an abort inside
   *   llama.cpp).
   */
  static async start(spec: RunnerSpec, options: ProcessRunnerOptions): Promise<ProcessRunner> {
    const oomBefore = await options.oomKills?.mark();
    const child = fork(options.childPath ?? RUNNER_CHILD_PATH, [options.label, ...(options.childArgs ?? [])], {
      serialization: 'advanced',
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      execArgv: [],
    });
    const ring = new StderrRing();
    const log = options.log ?? (() => undefined);
    const onLines = (lines: string[]) => lines.forEach(log);
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => onLines(ring.push(chunk)));
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => onLines(chunk.split(/\r?\n/).filter(Boolean)));
    child.on('error', () => undefined); // a send on a closed channel; the exit handler reports the death
    const exited = new Promise<RunnerExit>((resolve) =>
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        const last = ring.end();
        if (last !== undefined) log(last);
        const lines = ring.snapshot();
        // A SIGKILL the daemon sent itself (child.killed: close's timeout) is never an OOM kill.
        const oomKills = signal === 'SIGKILL' && !child.killed ? options.oomKills : undefined;
        if (!oomKills) resolve({ code, signal, lines, oomKilled: false });
        else {
          void oomKills
            .claim(oomBefore)
            .catch(() => false)
            .then((oomKilled) => resolve({ code, signal, lines, oomKilled }));
        }
      }),
    );
    let stall: StallTimer | undefined;
    const handshake = await new Promise<Extract<ChildMessage, { t: 'loaded' }>>((resolve, reject) => {
      stall = new StallTimer(options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS, () => {
        // Ollama's stall timer (llm/server.go WaitUntilRunning): the load made no progress for the timeout.
        const lastError = ring.snapshot().findLast((line) => ERROR_MARKERS.some((m) => line.includes(m)));
        reject(new ModelLoadError(loadTimeoutMessage(stall?.value ?? 0, lastError?.trim())));
        child.kill('SIGKILL');
      });
      const onMessage = (message: ChildMessage) => {
        if (message.t === 'loaded') resolve(message);
        else if (message.t === 'loadFailed') reject(fromWireError(message.error));
        else if (message.t === 'loadProgress') {
          stall?.progress(message.progress);
          options.onProgress?.(message.progress);
        }
      };
      child.on('message', onMessage);
      void exited.then(({ code, signal, lines, oomKilled }) =>
        reject(new RunnerTerminatedError(exitReason(code, signal, lines), crashCause(code, signal, lines, oomKilled))),
      );
      const heartbeatMs = heartbeatIntervalMs(options.heartbeatTimeoutMs ?? DEFAULT_RUNNER_HEARTBEAT_TIMEOUT_MS);
      child.send({
        t: 'load',
        spec,
        ...(options.threads !== undefined ? { threads: options.threads } : {}),
        ...(heartbeatMs > 0 ? { heartbeatMs } : {}),
        ...(options.fault ? { fault: options.fault } : {}),
        ...(options.extraBufferTypes === false ? { extraBufferTypes: false as const } : {}),
        ...(options.addon ? { addon: options.addon } : {}),
      } satisfies ParentMessage);
    }).catch(async (err: unknown) => {
      stall?.stop();
      child.removeAllListeners('message');
      if (child.exitCode === null && child.signalCode === null) {
        if (child.connected) child.send({ t: 'close' } satisfies ParentMessage);
        const timer = setTimeout(() => child.kill('SIGKILL'), options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      throw err;
    });
    stall?.stop();
    child.removeAllListeners('message');
    return new ProcessRunner(
      spec,
      handshake.info,
      handshake.slotContext,
      handshake.capabilities,
      handshake.snapshot,
      child,
      options,
      exited,
    );
  }

  /** The runner process's pid (diagnostics, tests). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the runner died before it produced any output (at load or on its first decode): crash-loop counting. */
  diedEarly(): boolean {
    return this.death !== undefined && !this.decoded;
  }

  generate(request: RunnerRequest): Observable<RunnerEvent> {
    return new Observable<RunnerEvent>((subscriber) => {
      if (this.death || this.closing) {
        subscriber.error(this.death ?? new InternalError('model was unloaded while in use'));
        return;
      }
      const id = this.nextId++;
      this.generations.set(id, subscriber);
      this.send({ t: 'generate', id, request });
      return () => {
        if (this.generations.delete(id)) this.send({ t: 'cancel', id });
      };
    });
  }

  tokenize(text: string, options: { addSpecial: boolean; parseSpecial: boolean }): Promise<number[]> {
    return this.call({ method: 'tokenize', args: [text, options] }) as Promise<number[]>;
  }

  detokenize(tokens: number[]): Promise<string> {
    return this.call({ method: 'detokenize', args: [tokens] }) as Promise<string>;
  }

  applyChatTemplate(messages: RunnerChatMessage[], options: { addGenerationPrompt: boolean }): Promise<string> {
    return this.call({ method: 'applyChatTemplate', args: [messages, options] }) as Promise<string>;
  }

  async renderChat(request: RunnerChatRequest): Promise<RunnerChatRender> {
    if (this.death) throw this.death;
    if (this.closing) throw new InternalError('model was unloaded while in use');
    this.vocab ??= (async () => {
      const model = new (this.options.binding().Model)(this.spec.modelPath, { vocabOnly: true });
      await model.load();
      return model;
    })();
    try {
      return await (await this.vocab).renderChatAsync(request);
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  chatCapabilities(): { tools: boolean; thinking: boolean } {
    return { ...this.capabilities };
  }

  /** Converted in the runner process (its LlamaRunner's grammar worker); `signal` sends `cancel`. */
  async jsonSchemaToGrammar(schema: string, signal?: AbortSignal): Promise<string> {
    if (signal?.aborted) throw new RequestCancelledError();
    return (await this.call({ method: 'jsonSchemaToGrammar', args: [schema] }, signal)) as string;
  }

  async embed(inputs: number[][], signal?: AbortSignal): Promise<Float32Array[]> {
    if (signal?.aborted) throw new RequestCancelledError();
    if (inputs.length === 0) return [];
    const steps = embedBatches(inputs, Math.min(this.spec.numBatch, this.spec.numCtx));
    return (await this.call({ method: 'embed', args: [inputs] }, signal, steps)) as Float32Array[];
  }

  usage(): RunnerUsage {
    if (this.death) return { ...this.snapshot.usage, slotsBusy: 0, queuedTasks: 0, kvCellsUsed: 0 };
    return this.snapshot.usage;
  }

  /** Sends the child the new thread count (it applies it before its next decode step). */
  setThreads(threads: number): void {
    if (!this.death) this.send({ t: 'threads', threads });
  }

  memory(): RunnerMemory {
    if (this.death) return { totalBytes: 0, vramBytes: 0, devices: [] };
    return this.snapshot.memory;
  }

  broken(): string | undefined {
    return this.death?.message ?? this.snapshot.broken;
  }

  onDeath(listener: (death: RunnerDeath) => void): void {
    if (this.deathEvent) listener(this.deathEvent);
    else this.deathListeners.push(listener);
  }

  /**
   * Sends `close` (the child cancels its generations, frees the model and exits) and waits for the exit; SIGKILL
   * after `closeTimeoutMs`. Generations and calls still in flight fail with InternalError `model was unloaded while
   * in use`. Idempotent; resolves at once for a dead runner.
   */
  close(): Promise<void> {
    this.watchdog.stop();
    this.closing ??= (async () => {
      const unloaded = () => new InternalError('model was unloaded while in use');
      this.failAll(unloaded);
      if (this.child.exitCode === null && this.child.signalCode === null) {
        this.send({ t: 'close' });
        const timer = setTimeout(() => this.child.kill('SIGKILL'), this.options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS);
        await this.exited;
        clearTimeout(timer);
      }
      // The vocab-only model of renderChat (renderChat refuses once closing, so no new one appears after this).
      await this.vocab?.then((m) => m.dispose()).catch(() => undefined);
    })();
    return this.closing;
  }

  private call(call: RunnerCall, signal?: AbortSignal, steps?: number): Promise<unknown> {
    if (this.death) return Promise.reject(this.death);
    if (this.closing) return Promise.reject(new InternalError('model was unloaded while in use'));
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => this.send({ t: 'cancel', id });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.calls.set(id, {
        method: call.method,
        sentAt: Date.now(),
        ...(steps !== undefined ? { steps } : {}),
        resolve: (value) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(value);
        },
        reject: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      });
      this.send({ t: 'call', id, ...call });
    });
  }

  private send(message: ParentMessage): void {
    if (this.child.connected) this.child.send(message, () => undefined);
  }

  private onMessage(message: ChildMessage): void {
    switch (message.t) {
      case 'events':
        this.snapshot = { memory: this.snapshot.memory, usage: message.usage, broken: message.broken };
        if (message.batch.length > 0) this.watchdog.progress();
        for (const record of message.batch) this.onRecord(record);
        break;
      case 'heartbeat':
        this.watchdog.heartbeat(message.progress);
        break;
      case 'result': {
        this.snapshot = message.snapshot;
        const pending = this.calls.get(message.id);
        if (!pending) break;
        this.calls.delete(message.id);
        if (pending.steps !== undefined) this.watchdog.progress();
        if (message.error) pending.reject(fromWireError(message.error));
        else {
          if (pending.method === 'embed') this.decoded = true;
          pending.resolve(message.value);
        }
        break;
      }
      case 'loaded':
      case 'loadFailed':
      case 'loadProgress':
        break;
    }
  }

  private onRecord(record: GenerationRecord): void {
    const subscriber = this.generations.get(record.id);
    if (!subscriber) return;
    if ('error' in record) {
      this.generations.delete(record.id);
      subscriber.error(fromWireError(record.error as WireError));
      return;
    }
    this.decoded = true;
    subscriber.next(record.event);
    if (record.event.kind === 'done') {
      this.generations.delete(record.id);
      subscriber.complete();
    }
  }

  /** What the watchdog watches: engine jobs in flight, the steps the slowest may take, the oldest other call. */
  private work(): RunnerWork {
    let engineJobs = this.generations.size;
    let steps = engineJobs > 0 ? 1 : 0;
    let oldestCallAt: number | undefined;
    for (const call of this.calls.values()) {
      if (call.steps !== undefined) {
        engineJobs++;
        steps = Math.max(steps, call.steps);
      } else if (oldestCallAt === undefined || call.sentAt < oldestCallAt) oldestCallAt = call.sentAt;
    }
    return { engineJobs, steps, ...(oldestCallAt !== undefined ? { oldestCallAt } : {}) };
  }

  /** The watchdog fired: the engine made no progress for too long with requests in flight. Kills the process. */
  private onStall(idleMs: number): void {
    if (this.closing || this.death) return;
    this.hung = stallReason(idleMs, this.generations.size + this.calls.size);
    this.options.log?.(`watchdog: ${this.hung}`);
    this.child.kill('SIGKILL');
  }

  private onExit({ code, signal, lines, oomKilled }: RunnerExit): void {
    this.watchdog.stop();
    if (this.closing) {
      this.failAll(() => new InternalError('model was unloaded while in use'));
      return;
    }
    const reason = this.hung ?? exitReason(code, signal, lines);
    const event: RunnerDeath = { reason, cause: this.hung ? 'hang' : crashCause(code, signal, lines, oomKilled) };
    const death = new RunnerTerminatedError(reason, event.cause);
    this.death = death;
    this.failAll(() => death);
    this.deathEvent = event;
    void this.vocab?.then((m) => m.dispose()).catch(() => undefined);
    for (const listener of this.deathListeners.splice(0)) listener(event);
  }

  /** Fails every generation and call in flight. */
  private failAll(error: () => DaemonError): void {
    const generations = [...this.generations.values()];
    this.generations.clear();
    for (const subscriber of generations) subscriber.error(error());
    const calls = [...this.calls.values()];
    this.calls.clear();
    for (const pending of calls) pending.reject(error());
  }
}
