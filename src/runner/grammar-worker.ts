import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { NativeBinding } from '../../binding';
import { DaemonError, InternalError, RequestCancelledError } from '../common/errors';
import { mapNativeError } from '../native';

/**
 * JSON Schema → GBNF conversion (llama.cpp json_schema_to_grammar) off the JS thread (docs/architecture.md "The
 * prompt stage"): the conversion is synchronous in the addon and takes about 2.5 µs per byte of schema, so the
 * runners hand it to a worker thread that loads the same addon file (the addon supports several environments in one
 * process: its backend is reference-counted, its state is per environment).
 */

/** The worker thread's entry, next to this file. */
const THREAD_PATH = join(__dirname, 'grammar-worker.thread.js');

/** A worker idle this long is terminated (its V8 heap and the addon's environment are freed), ms. */
export const GRAMMAR_WORKER_IDLE_MS = 30_000;

interface Job {
  schema: string;
  signal?: AbortSignal;
  resolve(grammar: string): void;
  reject(err: DaemonError): void;
}

/**
 * One worker thread for one addon file, started on the first conversion and terminated after
 * {@link GRAMMAR_WORKER_IDLE_MS} idle. Jobs run one at a time in arrival order; a job whose AbortSignal fires while
 * it waits is dropped (rejects with RequestCancelledError) without running; a running conversion is not interrupted
 * (the per-request grammar budget bounds it). A worker that dies fails its job with InternalError and is replaced on
 * the next call. The worker never keeps the process alive.
 */
export class GrammarWorker {
  private worker: Worker | undefined;
  private readonly queue: Job[] = [];
  private running: { id: number; job: Job } | undefined;
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;

  /** @param addonPath the addon file (`.node`) the worker loads. */
  constructor(readonly addonPath: string) {}

  /**
   * The GBNF grammar of a JSON Schema (JSON text).
   * @throws InvalidRequestError (the addon's LLAMA_INVALID_ARGUMENT: the schema cannot be converted);
   *   RequestCancelledError when `signal` fired before the job ran; InternalError when the worker died.
   */
  convert(schema: string, signal?: AbortSignal): Promise<string> {
    if (signal?.aborted) return Promise.reject(new RequestCancelledError());
    return new Promise<string>((resolve, reject) => {
      this.queue.push({ schema, signal, resolve, reject });
      this.pump();
    });
  }

  /** Terminates the worker (pending jobs fail with InternalError). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(() => new InternalError('the grammar worker was closed'));
    if (worker) await worker.terminate();
  }

  private pump(): void {
    if (this.running) return;
    let job = this.queue.shift();
    while (job?.signal?.aborted) {
      job.reject(new RequestCancelledError());
      job = this.queue.shift();
    }
    if (!job) {
      this.worker?.unref();
      this.scheduleIdle();
      return;
    }
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const worker = this.start();
    worker.ref();
    const id = this.nextId++;
    this.running = { id, job };
    worker.postMessage({ id, schema: job.schema });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD_PATH, { workerData: { addonPath: this.addonPath } });
    worker.on('message', (message: { id: number; grammar?: string; error?: { code?: string; message: string } }) => {
      const running = this.running;
      if (!running || running.id !== message.id) return;
      this.running = undefined;
      if (message.error) {
        running.job.reject(mapNativeError(Object.assign(new Error(message.error.message), message.error)));
      } else {
        running.job.resolve(message.grammar ?? '');
      }
      this.pump();
    });
    const onDeath = (reason: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const running = this.running;
      this.running = undefined;
      running?.job.reject(new InternalError(`the grammar worker ended: ${reason}`));
      this.pump();
    };
    worker.on('error', (err) => onDeath(err.message));
    worker.on('exit', (code) => onDeath(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }

  private scheduleIdle(): void {
    if (this.idleTimer || !this.worker) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.running || this.queue.length > 0) return;
      const worker = this.worker;
      this.worker = undefined;
      void worker?.terminate();
    }, GRAMMAR_WORKER_IDLE_MS);
    this.idleTimer.unref();
  }

  private failAll(error: () => DaemonError): void {
    const running = this.running;
    this.running = undefined;
    running?.job.reject(error());
    for (const job of this.queue.splice(0)) job.reject(error());
  }
}

const workers = new Map<string, GrammarWorker>();

/**
 * The file a loaded addon came from: the `.node` module in require's cache whose exports are `binding`; undefined for
 * a stand-in (a test FakeBinding), which cannot be loaded in a worker.
 */
export function addonFileOf(binding: unknown): string | undefined {
  for (const module of Object.values(require.cache)) {
    if (module && module.exports === binding && module.filename.endsWith('.node')) return module.filename;
  }
  return undefined;
}

/**
 * The grammar conversion of `binding` as an asynchronous function: through the process-wide {@link GrammarWorker} of
 * its addon file, or — for a stand-in binding that has no file — the binding's own function called on a later tick
 * (tests only).
 * @returns a function that resolves with the grammar; rejects as GrammarWorker.convert (errors as domain errors).
 */
export function grammarConverter(binding: NativeBinding): (schema: string, signal?: AbortSignal) => Promise<string> {
  const file = addonFileOf(binding);
  if (file) {
    let worker = workers.get(file);
    if (!worker) {
      worker = new GrammarWorker(file);
      workers.set(file, worker);
    }
    const shared = worker;
    return (schema, signal) => shared.convert(schema, signal);
  }
  return async (schema, signal) => {
    await Promise.resolve();
    if (signal?.aborted) throw new RequestCancelledError();
    try {
      return binding.jsonSchemaToGrammar(schema);
    } catch (err) {
      throw mapNativeError(err);
    }
  };
}
