import { Injectable, Logger } from '@nestjs/common';
import { currentRequestContext, RequestContext } from './request-context';
import { GenerationTrace } from './tracing/generation-trace';
import { epochMs } from './tracing/runner-report';

/** What ran: `/api/generate` (and the compat completions), `/api/chat` (and the compat chat routes), embeddings. */
export type GenerationKind = 'generate' | 'chat' | 'embed';

/** One generation (a generate, chat or embed run on a loaded model) as request hooks see it. */
export interface GenerationInfo {
  /** The HTTP request's id (`x-request-id`, kept or generated); absent for calls made outside an HTTP request. */
  requestId?: string;
  /** The model's short name, e.g. `tiny:latest`. */
  model: string;
  kind: GenerationKind;
  /** When the request's handler started, ms since the epoch. */
  startedAt: number;
}

/** A generation that ended: finished, failed or cancelled. Counts are tokens, durations as named. */
export interface GenerationEndInfo extends GenerationInfo {
  /** Prompt tokens, reused from the KV cache or evaluated (the whole prompt; for embed, every input's tokens). */
  promptTokens: number;
  /** Of `promptTokens`, tokens reused from the KV cache. */
  cachedTokens: number;
  /** Tokens generated (0 for embed). */
  completionTokens: number;
  /** Handler start → end, ns. */
  totalDurationNs: number;
  /** Evaluating the prompt tokens that were not reused, ns (0 when unknown: errors, cancellation). */
  promptEvalDurationNs: number;
  /** Generating, ns (0 when unknown). */
  evalDurationNs: number;
  /** Handler start → first generated token, ms; absent when no token came. */
  timeToFirstTokenMs?: number;
  /** `stop` or `length` when the generation finished. */
  doneReason?: string;
  /** Why it did not finish: the error's message, or `cancelled` when the caller went away. */
  error?: string;
}

/**
 * Callbacks on every generation (issue 13): a host application registers them (through the library's REQUEST_HOOKS
 * token, or {@link GenerationHooksRegistry.register}) to record usage. Called synchronously on the event loop, in
 * the order start → first token (when one comes) → end (exactly once, errors and cancellation included); keep them
 * cheap. A hook that throws is logged and ignored.
 */
export interface RequestHooks {
  onGenerationStart?(info: GenerationInfo): void;
  onFirstToken?(info: GenerationInfo & { timeToFirstTokenMs: number }): void;
  onGenerationEnd?(info: GenerationEndInfo): void;
}

/** Gets the gap between two consecutive generated tokens of one generation, seconds. Called once per token. */
export interface InterTokenObserver {
  observe(seconds: number): void;
}

/** Makes the {@link InterTokenObserver} of one model; called once per generation (not per token). */
export type InterTokenObserverFactory = (model: string) => InterTokenObserver;

/** The counts and durations a finished generation reports (the names of the inference layer's GenerationMetrics). */
export interface GenerationCounts {
  totalDurationNs: number;
  promptEvalCount: number;
  promptCachedCount: number;
  promptEvalDurationNs: number;
  evalCount: number;
  evalDurationNs: number;
}

const NO_OBSERVERS: readonly InterTokenObserver[] = [];

/**
 * The state of one generation between start and end, made by {@link GenerationHooksRegistry.begin}: the inference
 * layer calls {@link token} for every generated token (no allocation: a counter, a clock read and the inter-token
 * observers) and exactly one of {@link finish}, {@link fail} or {@link cancel} (later calls are ignored).
 */
export class GenerationTracker {
  /** Prompt tokens, once the prompt is built. */
  promptTokens = 0;
  /** Tokens generated so far. */
  completionTokens = 0;
  /** Handler start → first token, ms (set by the first {@link token}). */
  timeToFirstTokenMs?: number;
  private lastTokenAt = 0;
  private ended = false;

  /**
   * @param startedAtNs `process.hrtime.bigint()` at handler start.
   * @param context the HTTP request's context, when the generation runs inside one.
   */
  constructor(
    private readonly registry: GenerationHooksRegistry,
    readonly info: GenerationInfo,
    private readonly startedAtNs: bigint,
    private readonly observers: readonly InterTokenObserver[],
    private readonly context: RequestContext | undefined,
    /** The generation's spans, when it is traced (a tracer provider is registered and it is sampled). */
    readonly trace?: GenerationTrace,
  ) {}

  /** The prompt is built: its size in tokens. */
  prompt(tokens: number): void {
    this.promptTokens = tokens;
  }

  /** One token was generated. */
  token(): void {
    const now = performance.now();
    if (++this.completionTokens === 1) {
      this.timeToFirstTokenMs = Number(process.hrtime.bigint() - this.startedAtNs) / 1e6;
      this.trace?.firstToken();
      this.registry.emitFirstToken(this.info, this.timeToFirstTokenMs);
    } else {
      const gap = (now - this.lastTokenAt) / 1000;
      const observers = this.observers;
      for (let i = 0; i < observers.length; i++) observers[i].observe(gap);
    }
    this.lastTokenAt = now;
  }

  /** The generation finished with these counts (the runner's), `reason` `stop` or `length`. */
  finish(counts: GenerationCounts, reason: string): void {
    this.end({
      promptTokens: counts.promptEvalCount,
      cachedTokens: counts.promptCachedCount,
      completionTokens: counts.evalCount,
      totalDurationNs: counts.totalDurationNs,
      promptEvalDurationNs: counts.promptEvalDurationNs,
      evalDurationNs: counts.evalDurationNs,
      doneReason: reason,
    });
  }

  /** The generation failed with `err` (counts so far are reported). */
  fail(err: unknown): void {
    this.end(this.partial(err instanceof Error ? err.message : String(err)));
  }

  /** The caller went away before the end (no-op when it already ended). */
  cancel(): void {
    this.end(this.partial('cancelled'));
  }

  private partial(error: string) {
    return {
      promptTokens: this.promptTokens,
      cachedTokens: 0,
      completionTokens: this.completionTokens,
      totalDurationNs: Number(process.hrtime.bigint() - this.startedAtNs),
      promptEvalDurationNs: 0,
      evalDurationNs: 0,
      error,
    };
  }

  private end(result: Omit<GenerationEndInfo, keyof GenerationInfo | 'timeToFirstTokenMs'> & { error?: string }): void {
    if (this.ended) return;
    this.ended = true;
    const info: GenerationEndInfo = {
      ...this.info,
      ...result,
      ...(this.timeToFirstTokenMs !== undefined ? { timeToFirstTokenMs: this.timeToFirstTokenMs } : {}),
    };
    this.context?.addGeneration(info);
    this.trace?.end(info);
    this.registry.emitEnd(info);
  }
}

/**
 * Every {@link RequestHooks} registered in one application, and the emit side used by the inference layer. One per
 * application (the library's REQUEST_HOOKS and the metrics register into it). Registration is copy-on-write, so a
 * hook may unregister itself (or register another) while being called.
 */
@Injectable()
export class GenerationHooksRegistry {
  private readonly logger = new Logger('GenerationHooks');
  private hooks: readonly RequestHooks[] = [];
  private observerFactories: readonly InterTokenObserverFactory[] = [];

  /**
   * Adds hooks; they see every generation that starts from now on.
   * @returns a function that removes them again (idempotent).
   */
  register(hooks: RequestHooks): () => void {
    this.hooks = [...this.hooks, hooks];
    return () => {
      this.hooks = this.hooks.filter((h) => h !== hooks);
    };
  }

  /**
   * Adds a per-token observer (metrics: the inter-token histogram), made once per generation for its model.
   * @returns a function that removes it again.
   */
  registerInterTokenObserver(factory: InterTokenObserverFactory): () => void {
    this.observerFactories = [...this.observerFactories, factory];
    return () => {
      this.observerFactories = this.observerFactories.filter((f) => f !== factory);
    };
  }

  /**
   * Starts tracking one generation: emits `onGenerationStart` and returns its tracker, with the generation's spans
   * when it is traced (tracing/generation-trace.ts). The request id comes from the current HTTP request's context,
   * when there is one.
   * @param model the model's short name.
   * @param startedAtNs `process.hrtime.bigint()` at handler start.
   */
  begin(model: string, kind: GenerationKind, startedAtNs: bigint): GenerationTracker {
    const context = currentRequestContext();
    const elapsedMs = Number(process.hrtime.bigint() - startedAtNs) / 1e6;
    const info: GenerationInfo = {
      ...(context ? { requestId: context.id } : {}),
      model,
      kind,
      startedAt: Date.now() - elapsedMs,
    };
    const factories = this.observerFactories;
    const observers = factories.length === 0 ? NO_OBSERVERS : factories.map((f) => f(model));
    this.emitStart(info);
    const trace = GenerationTrace.start(kind, model, epochMs() - elapsedMs, context);
    return new GenerationTracker(this, info, startedAtNs, observers, context, trace);
  }

  /** Calls every `onGenerationStart`. */
  emitStart(info: GenerationInfo): void {
    for (const hooks of this.hooks) {
      if (hooks.onGenerationStart) this.call(() => hooks.onGenerationStart?.(info));
    }
  }

  /** Calls every `onFirstToken` (the info object is built only when one is registered). */
  emitFirstToken(info: GenerationInfo, timeToFirstTokenMs: number): void {
    let withTime: (GenerationInfo & { timeToFirstTokenMs: number }) | undefined;
    for (const hooks of this.hooks) {
      if (!hooks.onFirstToken) continue;
      withTime ??= { ...info, timeToFirstTokenMs };
      const arg = withTime;
      this.call(() => hooks.onFirstToken?.(arg));
    }
  }

  /** Calls every `onGenerationEnd`. */
  emitEnd(info: GenerationEndInfo): void {
    for (const hooks of this.hooks) {
      if (hooks.onGenerationEnd) this.call(() => hooks.onGenerationEnd?.(info));
    }
  }

  private call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.logger.error(`a request hook threw: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
