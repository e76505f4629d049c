import { createHash } from 'node:crypto';
import { finalize, Observable, Subscription } from 'rxjs';
import type { NativeBinding, NativeContext, NativeEvent, NativeModel, NativeTaskParams } from '../../binding';
import {
  ContextLengthExceededError,
  DaemonError,
  InternalError,
  ModelLoadError,
  RequestCancelledError,
} from '../common/errors';
import { mapNativeError, PROMPT_TOO_LONG_MESSAGE } from '../native';
import {
  Runner,
  RunnerChatMessage,
  RunnerChatRender,
  RunnerChatRequest,
  RunnerEvent,
  RunnerLora,
  RunnerMemory,
  RunnerModelInfo,
  RunnerRequest,
  RunnerSpec,
  RunnerUsage,
} from './runner';
import {
  batchParams,
  cacheRamParams,
  embeddingContextParams,
  kvParams,
  threadParams,
  totalCells,
} from './context-params';
import { machinePhysicalCores } from './cpu-threads';
import { grammarConverter } from './grammar-worker';
import { eventLogprob } from './logprobs';
import { appliedLoras, DEFAULT_MAX_LORAS, LoraResidency } from './lora-residency';
import { isEmbeddingModel, rerankInfo } from './model-facts';
import { sumMemory } from './runner-memory';

/** A failure while loading (weights, an adapter) is a load error unless the addon said something more specific (e.g. out of memory). */
function asLoadError(err: unknown): DaemonError {
  const mapped = mapNativeError(err);
  return mapped instanceof InternalError ? new ModelLoadError(mapped.message, { cause: err }) : mapped;
}

/** The engine's error text when an RPC worker's connection broke (native/engine.cpp LostRpcServer). */
const RPC_LOST = /^rpc server \S+: connection lost$/;

/**
 * A Runner over the native addon: one Model and one Context with `numParallel` slots (n_ctx = numCtx × numParallel,
 * or numCtx shared by the slots with `kvUnified`),
 * with the spec's LoRA adapters (`adapterPaths`) attached to every context it creates.
 * For an embedding model (GGUF `pooling_type`) that context is an embedding context (batch = ubatch = numCtx so an
 * input of a full slot fits one ubatch); a generation model asked to embed gets a second, embedding context on first
 * use (same slots and size), disposed with the runner.
 * All decoding happens on the context's own native thread; this class only submits tasks and relays events, which
 * arrive on the JS thread in order (binding.d.ts NativeEvent). Nothing heavy runs on the JS thread: contexts are
 * created with Context.create, tokenizing and template rendering use the addon's *Async calls (libuv pool), and a
 * task's images are decoded on the context's media thread.
 */
export class LlamaRunner implements Runner {
  private closed: Promise<void> | undefined;
  /** The embedding context: the main context of an embedding model, else created on the first embed(). */
  private embedContext: Promise<NativeContext> | undefined;
  /** The embedding context once created (for memory()). */
  private embedContextReady: NativeContext | undefined;
  /** KV cells held by generations in flight (prompt + generated tokens), for {@link usage}. */
  private cellsInFlight = 0;
  /** Set once an RPC worker's connection broke (the engine's error text): see {@link broken}. */
  private lostWorker: string | undefined;
  /** Threads the contexts were last given (setThreads), for an embedding context created later. */
  private threads: number | undefined;
  private toGrammar: ((schema: string, signal?: AbortSignal) => Promise<string>) | undefined;
  /** {@link onTaskEnd} listeners. */
  private readonly taskEndListeners: (() => void)[] = [];
  /** The LoRA adapters resident over these weights (RunnerSpec.maxLoras). */
  private readonly loras: LoraResidency;

  private constructor(
    readonly spec: RunnerSpec,
    readonly info: RunnerModelInfo,
    private readonly binding: NativeBinding,
    private readonly model: NativeModel,
    private readonly context: NativeContext,
    private readonly draftModel?: NativeModel,
  ) {
    if (info.embeddingModel) this.embedContext = Promise.resolve(context);
    this.loras = new LoraResidency(
      Math.max(1, spec.maxLoras ?? DEFAULT_MAX_LORAS),
      {
        load: (path) => model.loadLora(path).catch((err: unknown) => Promise.reject(asLoadError(err))),
        unload: (path) => model.unloadLora(path),
      },
      () => this.taskEnded(),
    );
  }

  /**
   * Loads the weights and creates the context.
   * @param threads threads to start with when spec.numThread is 0 (default: the physical cores).
   * @param onProgress the weights' load progress in [0, 1] (NativeModel.load), on the JS thread.
   * @param extraBufts false: weights stay out of the CPU backend's extra buffer types (AMX, repacked layouts).
   * @throws ModelLoadError (unloadable file, unknown architecture, context creation failure, missing addon),
   *   InsufficientMemoryError.
   */
  static async load(
    binding: NativeBinding,
    spec: RunnerSpec,
    threads?: number,
    onProgress?: (progress: number) => void,
    extraBufts = true,
  ): Promise<LlamaRunner> {
    let model: NativeModel;
    try {
      model = new binding.Model(spec.modelPath, {
        ...(spec.numGpu >= 0 ? { nGpuLayers: spec.numGpu } : {}),
        ...(spec.useMmap !== undefined ? { useMmap: spec.useMmap } : {}),
        ...(spec.rpcServers && spec.rpcServers.length > 0 ? { rpcServers: spec.rpcServers } : {}),
        ...(extraBufts ? {} : { useExtraBufferTypes: false }),
      });
      await model.load(onProgress);
    } catch (err) {
      throw asLoadError(err);
    }
    let draftModel: NativeModel | undefined;
    try {
      const native = model.info();
      const embeddingModel = isEmbeddingModel(model);
      if (spec.draftModelPath && !embeddingModel) {
        draftModel = new binding.Model(spec.draftModelPath, {
          ...(spec.numGpu >= 0 ? { nGpuLayers: spec.numGpu } : {}),
          ...(spec.useMmap !== undefined ? { useMmap: spec.useMmap } : {}),
          ...(extraBufts ? {} : { useExtraBufferTypes: false }),
        });
        await draftModel.load();
      }
      // Off the JS thread (libuv pool): a context of 8 slots takes about a second to create.
      const context = await binding.Context.create(
        model,
        embeddingModel
          ? embeddingContextParams(spec, threads)
          : {
              nCtx: totalCells(spec),
              ...batchParams(spec),
              nParallel: spec.numParallel,
              ...(spec.kvUnified ? { kvUnified: true } : {}),
              ...threadParams(spec, threads),
              ...(spec.projectorPath ? { projectorPath: spec.projectorPath } : {}),
              ...kvParams(spec),
              ...cacheRamParams(spec),
              ...(draftModel ? { draftModel } : {}),
            },
      );
      const info: RunnerModelInfo = {
        trainContext: native.nCtxTrain,
        addBos: native.addBos,
        bos: native.bos,
        addEos: native.addEos,
        eos: native.eos,
        hasChatTemplate: model.chatTemplate() !== null,
        embeddingModel,
        flashAttention: context.stats().flashAttn,
        ...rerankInfo(model),
      };
      const runner = new LlamaRunner(spec, info, binding, model, context, draftModel);
      runner.threads = threads;
      return runner;
    } catch (err) {
      await draftModel?.dispose().catch(() => undefined);
      await model.dispose().catch(() => undefined);
      throw asLoadError(err);
    }
  }

  get slotContext(): number {
    return this.spec.numCtx;
  }

  /**
   * A generation (Runner.generate). With adapters (request.loras), it first waits until its set is resident
   * ({@link LoraResidency}: loaded over these weights, LLAMAD_MAX_LORAS at most) and runs with a cache scope of its
   * own set, so that its KV prefixes are never reused by another set (nor the base weights).
   */
  generate(request: RunnerRequest): Observable<RunnerEvent> {
    const loras = appliedLoras(request.loras ?? []);
    if (loras.length === 0) return this.submitTask(request);
    return new Observable<RunnerEvent>((subscriber) => {
      const abort = new AbortController();
      let release: (() => void) | undefined;
      let inner: Subscription | undefined;
      this.loras.acquire(loras, abort.signal).then(
        (done) => {
          release = done;
          if (subscriber.closed) return done();
          const extra = {
            loras: loras.map(({ path, scale }) => ({ path, scale })),
            cacheScope: loraScope(request.cacheScope, loras),
          };
          // The adapters are released when the engine's task ended (finished, failed or cancelled).
          inner = this.submitTask(request, extra).pipe(finalize(done)).subscribe(subscriber);
        },
        (err: unknown) => subscriber.error(err),
      );
      return () => {
        abort.abort();
        inner?.unsubscribe();
        if (!inner) release?.();
      };
    });
  }

  /** Submits one task to the generation context and relays its events; `extra` overrides task fields. */
  private submitTask(request: RunnerRequest, extra: Partial<NativeTaskParams> = {}): Observable<RunnerEvent> {
    return new Observable<RunnerEvent>((subscriber) => {
      let finished = false;
      let taskId: number | undefined;
      // KV cells this generation holds (for usage()): its prompt once the first token shows it was evaluated (a task
      // still queued for a slot holds none), then one more per token; all given back at the end.
      let cells = 0;
      const releaseCells = () => {
        this.cellsInFlight -= cells;
        cells = 0;
      };
      const task: NativeTaskParams = {
        tokens: request.media ? new Int32Array(0) : Int32Array.from(request.tokens),
        ...(request.media ? { prompt: request.media.prompt, images: request.media.images } : {}),
        nPredict: request.numPredict,
        contextShift: request.shift ?? true,
        ...(request.numKeep !== undefined
          ? { nKeep: Math.min(0x7fffffff, Math.max(-1, Math.trunc(request.numKeep))) }
          : {}),
        sampling: { ...request.sampling },
        stop: request.stop,
        ...(request.logprobs !== undefined ? { logprobs: request.logprobs } : {}),
        ...(request.draft && request.draft.nMax > 0 ? { draft: { ...request.draft } } : {}),
        ...(request.cacheScope ? { cacheScope: request.cacheScope } : {}),
        ...(request.maxAudioSeconds ? { maxAudioSeconds: request.maxAudioSeconds } : {}),
        ...extra,
      };
      const onEvent = (event: NativeEvent) => {
        // The engine freed the task's slot before it sent this event (also after a cancel, when nobody listens).
        if (event.type === 'done' || event.type === 'error') this.taskEnded();
        if (finished) return;
        switch (event.type) {
          case 'token': {
            // A context shift frees cells: a generation never holds more than its slot.
            const held = Math.min(this.spec.numCtx, cells === 0 ? request.tokens.length + 1 : cells + 1);
            const added = held - cells;
            cells = held;
            this.cellsInFlight += added;
            const logprob = eventLogprob(event);
            subscriber.next({ kind: 'token', text: event.text, token: event.token, ...(logprob ? { logprob } : {}) });
            break;
          }
          case 'done':
            finished = true;
            releaseCells();
            if (event.reason === 'cancelled') {
              subscriber.error(new RequestCancelledError());
              return;
            }
            subscriber.next({
              kind: 'done',
              reason: event.reason === 'length' ? 'length' : 'stop',
              ...(event.reason === 'stop' && event.stopString !== undefined ? { stopString: event.stopString } : {}),
              timings: {
                promptEvalCount: event.timings.promptTotal,
                promptCachedCount: Math.max(0, event.timings.promptTotal - event.timings.promptN),
                promptEvalDurationNs: event.timings.promptNs,
                evalCount: event.timings.predictedN,
                evalDurationNs: event.timings.predictedNs,
                ...(event.timings.slot !== undefined ? { slot: event.timings.slot } : {}),
              },
            });
            subscriber.complete();
            break;
          case 'error':
            finished = true;
            releaseCells();
            if (RPC_LOST.test(event.message)) this.lostWorker = event.message;
            subscriber.error(mapNativeError({ code: event.code, message: event.message }));
            break;
        }
      };
      try {
        taskId = this.context.submit(task, onEvent);
      } catch (err) {
        finished = true;
        releaseCells();
        subscriber.error(mapNativeError(err));
      }
      return () => {
        releaseCells();
        if (!finished && taskId !== undefined) {
          finished = true;
          this.context.cancel(taskId);
        }
      };
    });
  }

  /**
   * Calls `listener` on the JS thread each time a generation task ended in the engine — finished, failed, or after a
   * cancel (the engine's final event, which the generation itself no longer relays) — at which point usage() no
   * longer counts its slot or queue place. The runner process sends its parent a fresh usage snapshot then.
   */
  onTaskEnd(listener: () => void): void {
    this.taskEndListeners.push(listener);
  }

  private taskEnded(): void {
    for (const listener of this.taskEndListeners) listener();
  }

  /**
   * Slots, queue, KV cells and threads from the context's own stats. KV cells used: those the engine counts for the
   * tasks in its slots after its last step (prompt and generated tokens; what idle slots keep for prefix reuse is not
   * counted), else as tracked here from the events. Total: numCtx × slots, or numCtx when the slots share the cache.
   */
  usage(): RunnerUsage {
    const total = totalCells(this.spec);
    if (this.closed) return { slotsBusy: 0, queuedTasks: 0, kvCellsTotal: total, kvCellsUsed: 0 };
    const stats = this.context.stats();
    const used = typeof stats.kvCellsUsed === 'number' ? stats.kvCellsUsed : this.cellsInFlight;
    const embedding = this.info.embeddingModel === true;
    return {
      slotsBusy: embedding ? 0 : stats.activeSlots,
      queuedTasks: embedding ? 0 : stats.queuedTasks,
      kvCellsTotal: total,
      kvCellsUsed: embedding ? 0 : Math.min(total, used),
      ...(!embedding && stats.pausedSlots > 0 ? { slotsWaiting: stats.pausedSlots } : {}),
      ...(typeof stats.nThreads === 'number' ? { threads: stats.nThreads } : {}),
      ...(!embedding && (this.spec.cacheRamBytes ?? 0) > 0 && typeof stats.ramCacheBytes === 'number'
        ? {
            ramCache: {
              entries: stats.ramCacheEntries,
              bytes: stats.ramCacheBytes,
              hits: stats.ramCacheHits,
              tokens: stats.ramCacheTokens,
            },
          }
        : {}),
      ...(stats.draftTokens > 0 ? { draftTokens: stats.draftTokens, draftAccepted: stats.draftAccepted } : {}),
      ...(typeof stats.decodeSteps === 'number' ? { decodeSteps: stats.decodeSteps } : {}),
      ...(embedding ? {} : { loras: this.loras.usage() }),
    };
  }

  /**
   * Threads of the following decodes of every context of this runner (the scheduler's new split of the cores);
   * ignored when the spec has an explicit numThread, or once closed.
   */
  setThreads(threads: number): void {
    if (this.spec.numThread > 0 || this.closed) return;
    const n = Math.max(1, Math.min(machinePhysicalCores(), Math.floor(threads)));
    this.threads = n;
    try {
      this.context.setThreads(n);
      if (this.embedContextReady && this.embedContextReady !== this.context) this.embedContextReady.setThreads(n);
    } catch {
      // disposed meanwhile: nothing left to tune
    }
  }

  /**
   * Sums the contexts' buffer sizes (read when each was created): the weights once, plus KV cache and compute buffers
   * of the generation context and of the embedding context once it exists.
   */
  memory(): RunnerMemory {
    const contexts = [this.context];
    if (this.embedContextReady && this.embedContextReady !== this.context) contexts.push(this.embedContextReady);
    return sumMemory(
      contexts.map((c, i) => (this.closed ? [] : c.memory()).map((e) => (i > 0 ? { ...e, model: 0 } : e))),
    );
  }

  /**
   * Why the runner cannot generate any more: an RPC worker's connection broke (every later decode fails at once,
   * vendor/patches/0001); the scheduler unloads it once idle, and the next request loads it again (probing the
   * workers). undefined while healthy.
   */
  broken(): string | undefined {
    return this.lostWorker;
  }

  async tokenize(text: string, options: { addSpecial: boolean; parseSpecial: boolean }): Promise<number[]> {
    try {
      return Array.from(await this.model.tokenizeAsync(text, options.addSpecial, options.parseSpecial));
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  async detokenize(tokens: number[]): Promise<string> {
    try {
      return await this.model.detokenizeAsync(Int32Array.from(tokens), false, true);
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  async applyChatTemplate(messages: RunnerChatMessage[], options: { addGenerationPrompt: boolean }): Promise<string> {
    try {
      return await this.model.applyChatTemplateAsync(messages, { addGenerationPrompt: options.addGenerationPrompt });
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  async renderChat(request: RunnerChatRequest): Promise<RunnerChatRender> {
    try {
      return await this.model.renderChatAsync(request);
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  chatCapabilities(): { tools: boolean; thinking: boolean } {
    if (!this.info.hasChatTemplate) return { tools: false, thinking: false };
    try {
      return this.model.chatCapabilities();
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  /** The addon's conversion in its grammar worker thread (grammarConverter), never on this JS thread. */
  jsonSchemaToGrammar(schema: string, signal?: AbortSignal): Promise<string> {
    this.toGrammar ??= grammarConverter(this.binding);
    return this.toGrammar(schema, signal);
  }

  async embed(inputs: number[][], signal?: AbortSignal): Promise<Float32Array[]> {
    if (this.closed) throw new InternalError('model was unloaded while in use');
    if (signal?.aborted) throw new RequestCancelledError();
    if (inputs.length === 0) return [];
    // The embedding context may hold more cells than num_ctx (context-params embeddingSizes): the limit is checked here.
    const tooLong = inputs.find((input) => input.length > this.spec.numCtx);
    if (tooLong) throw new ContextLengthExceededError(PROMPT_TOO_LONG_MESSAGE, tooLong.length, this.spec.numCtx);
    this.embedContext ??= this.binding.Context.create(this.model, embeddingContextParams(this.spec, this.threads));
    let context: NativeContext;
    try {
      context = await this.embedContext;
      this.embedContextReady = context;
    } catch (err) {
      this.embedContext = undefined;
      throw mapNativeError(err);
    }
    if (signal?.aborted) throw new RequestCancelledError();
    let jobId: number | undefined;
    const onAbort = () => {
      if (jobId !== undefined) context.cancel(jobId);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await context.embed(
        inputs.map((t) => Int32Array.from(t)),
        (id) => {
          jobId = id;
        },
      );
    } catch (err) {
      throw mapNativeError(err);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      const extra = this.embedContext;
      await this.context.dispose();
      if (extra) {
        const ctx = await extra.catch(() => undefined);
        if (ctx && ctx !== this.context) await ctx.dispose();
      }
      await this.draftModel?.dispose();
      await this.model.dispose();
    })();
    return this.closed;
  }
}

/**
 * The cache scope of a generation with adapters: its principal's scope (RunnerRequest.cacheScope) joined with a hash of
 * its adapter set, so that KV left by one set (or by the base weights) is never reused by another.
 */
function loraScope(scope: string | undefined, loras: RunnerLora[]): string {
  const key = loras
    .map((l) => `${l.path}\u001f${l.scale}`)
    .sort()
    .join('\u001e');
  return `${scope ?? ''}|lora:${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}
