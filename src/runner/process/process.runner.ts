import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { Observable, Subscriber } from 'rxjs';
import type { NativeBinding, NativeModel } from '../../../binding';
import { DaemonError, InternalError, RequestCancelledError, RunnerTerminatedError } from '../../common/errors';
import { mapNativeError } from '../../native';
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
import { crashCause, exitReason, StderrRing } from './exit-reason';
import {
  ChildMessage,
  fromWireError,
  GenerationRecord,
  ParentMessage,
  RunnerCall,
  RunnerSnapshot,
  WireError,
} from './protocol';

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
  /** The parent's own binding, for jsonSchemaToGrammar and renderChat (a vocab-only model); loaded lazily. */
  binding: () => NativeBinding;
  /** Where the child's stderr/stdout lines go, one call per line. */
  log?: (line: string) => void;
  /** close(): how long to wait for the exit before SIGKILL, ms. */
  closeTimeoutMs?: number;
  /** Threads to load with when spec.numThread is 0 (RunnerCreateOptions.threads). */
  threads?: number;
  /**
   * false: the child loads the model without the CPU backend's extra buffer types (AMX, repacked weights;
   * binding.d.ts NativeModelParams.useExtraBufferTypes). Default true.
   */
  extraBufferTypes?: boolean;
}

interface PendingCall {
  method: RunnerCall['method'];
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
 * - jsonSchemaToGrammar() runs on the parent's own binding (a pure llama.cpp function, no model), and renderChat() on
 *   a vocab-only copy of the model loaded in the parent (GGUF metadata and tokenizer only: no tensors, no decoding),
 *   because its result carries a synchronous output parser (a native object) that cannot cross a process boundary;
 * - when the child dies on its own (abort, signal, OOM kill, exit) every generation and call in flight fails with
 *   RunnerTerminatedError (`llama runner process has terminated: <last meaningful stderr line>`), later calls fail
 *   the same way, and the onDeath listeners (the scheduler) run once.
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

  private constructor(
    readonly spec: RunnerSpec,
    readonly info: RunnerModelInfo,
    readonly slotContext: number,
    private readonly capabilities: { tools: boolean; thinking: boolean },
    snapshot: RunnerSnapshot,
    private readonly child: ChildProcess,
    private readonly options: ProcessRunnerOptions,
    /** Resolves with how the process ended. */
    private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: string[] }>,
  ) {
    this.snapshot = snapshot;
    child.on('message', (message: ChildMessage) => this.onMessage(message));
    void exited.then(({ code, signal, lines }) => this.onExit(code, signal, lines));
  }

  /**
   * Starts a runner process and loads `spec` in it.
   * @throws ModelLoadError / InsufficientMemoryError as the child's LlamaRunner.load raised them;
   *   RunnerTerminatedError when the process died while loading (e.g. an abort inside llama.cpp).
   */
  static async start(spec: RunnerSpec, options: ProcessRunnerOptions): Promise<ProcessRunner> {
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
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: string[] }>((resolve) =>
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        const last = ring.end();
        if (last !== undefined) log(last);
        resolve({ code, signal, lines: ring.snapshot() });
      }),
    );
    const handshake = await new Promise<Extract<ChildMessage, { t: 'loaded' }>>((resolve, reject) => {
      const onMessage = (message: ChildMessage) => {
        if (message.t === 'loaded') resolve(message);
        else if (message.t === 'loadFailed') reject(fromWireError(message.error));
      };
      child.on('message', onMessage);
      void exited.then(({ code, signal, lines }) =>
        reject(new RunnerTerminatedError(exitReason(code, signal, lines), crashCause(code, signal, lines))),
      );
      child.send({
        t: 'load',
        spec,
        ...(options.threads !== undefined ? { threads: options.threads } : {}),
        ...(options.extraBufferTypes === false ? { extraBufferTypes: false as const } : {}),
      } satisfies ParentMessage);
    }).catch(async (err: unknown) => {
      child.removeAllListeners('message');
      if (child.exitCode === null && child.signalCode === null) {
        if (child.connected) child.send({ t: 'close' } satisfies ParentMessage);
        const timer = setTimeout(() => child.kill('SIGKILL'), options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      throw err;
    });
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

  jsonSchemaToGrammar(schema: string): string {
    try {
      return this.options.binding().jsonSchemaToGrammar(schema);
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  async embed(inputs: number[][], signal?: AbortSignal): Promise<Float32Array[]> {
    if (signal?.aborted) throw new RequestCancelledError();
    if (inputs.length === 0) return [];
    return (await this.call({ method: 'embed', args: [inputs] }, signal)) as Float32Array[];
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
    this.closing ??= (async () => {
      const unloaded = () => new InternalError('model was unloaded while in use');
      this.failAll(unloaded);
      if (this.child.exitCode !== null || this.child.signalCode !== null) return;
      this.send({ t: 'close' });
      const timer = setTimeout(() => this.child.kill('SIGKILL'), this.options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS);
      await this.exited;
      clearTimeout(timer);
      await this.vocab?.then((m) => m.dispose()).catch(() => undefined);
    })();
    return this.closing;
  }

  private call(call: RunnerCall, signal?: AbortSignal): Promise<unknown> {
    if (this.death) return Promise.reject(this.death);
    if (this.closing) return Promise.reject(new InternalError('model was unloaded while in use'));
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => this.send({ t: 'cancel', id });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.calls.set(id, {
        method: call.method,
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
        for (const record of message.batch) this.onRecord(record);
        break;
      case 'result': {
        this.snapshot = message.snapshot;
        const pending = this.calls.get(message.id);
        if (!pending) break;
        this.calls.delete(message.id);
        if (message.error) pending.reject(fromWireError(message.error));
        else {
          if (pending.method === 'embed') this.decoded = true;
          pending.resolve(message.value);
        }
        break;
      }
      case 'loaded':
      case 'loadFailed':
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

  private onExit(code: number | null, signal: NodeJS.Signals | null, lines: string[]): void {
    if (this.closing) {
      this.failAll(() => new InternalError('model was unloaded while in use'));
      return;
    }
    const reason = exitReason(code, signal, lines);
    const event: RunnerDeath = { reason, cause: crashCause(code, signal, lines) };
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
