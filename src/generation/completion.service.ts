import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { catchError, from, mergeMap, Observable, of, switchMap, throwError } from 'rxjs';
import { ContextLengthExceededError } from '../common/errors';
import { OptionMap } from '../common/options';
import { KeepAliveMs } from '../common/time';
import { cacheScopeMode, DaemonConfig, kvCacheSettings, parallelPlan } from '../config';
import { ResolvedModel } from '../models';
import { GenerationHooksRegistry, GenerationTracker } from '../observability/generation-hooks';
import { currentRequestContext } from '../observability/request-context';
import { cacheScopeKey } from '../security/cache-scope';
import { TOKEN_BUDGET, TokenBudget, TokenMeter } from '../security/limits/token-budget';
import { ChatObserver, GenerationEvent, GenerationMetrics, Logprob } from './generation.types';
import { EffectiveOptions, OptionCaps, OptionDefaults, resolveOptions } from './options';
import { isEmptyDelta } from './output';
import { reservedTokens, withTokenReservation } from './token-reservation';
import { PreparedPrompt, PromptService, PromptSource } from './prompt';
import { Runner, RunnerLora, RunnerSpec } from '../runner';
import { defaultLoras } from './lora-selection';
import { FairTicket, fairTicket, ramCacheShareBytes, SchedulerService } from '../scheduler';

/** One completion to run. */
export interface CompletionRequest {
  model: ResolvedModel;
  /** Typed request options (merged over the model's params). */
  options: OptionMap;
  keepAliveMs?: KeepAliveMs;
  /** process.hrtime.bigint() at handler start. */
  startedAt: bigint;
  /** Only load the model, then answer `done_reason: "load"` (empty prompt / messages). */
  loadOnly?: boolean;
  /**
   * The prompt to run, as data: the prompt stage (PromptService.prepare) turns it into tokens once the runner is
   * loaded (it needs the runner's template and tokenizer). Its `kind` is what the request hooks and metrics call this
   * generation. Absent = load only.
   */
  prompt?: PromptSource;
  /** Told the prompt size once the prompt is prepared, before generation starts (chat's compat layers). */
  observer?: ChatObserver;
  /** Return prompt + output token ids on the done event (generate's `context`). */
  returnContext?: boolean;
  /** Report logprobs with this many alternatives per token (0..20); undefined = none. */
  topLogprobs?: number;
  /** Context shift when the context fills during generation (Ollama's `shift`, §4.4); default true. */
  shift?: boolean;
  /**
   * Never cut the prompt: when the prompt stage finds it longer than the slot (it then throws
   * ContextLengthExceededError with `promptTokens`: the command's own `growContext` implies `truncate: false`), reload
   * the model with a context large enough for the prompt plus the reply (see {@link CompletionService.grownContext}).
   * Set by the compat layers (issue 12 §5); the native /api keeps Ollama's truncation.
   */
  growContext?: boolean;
  /**
   * The caller's policy caps (`max_context`, `max_output_tokens`; docs/security.md "Tenants"). Absent = those of the
   * request context's policy when {@link CompletionService.complete} is subscribed.
   */
  caps?: OptionCaps;
  /**
   * The adapters of this generation, resolved (lora-selection.ts resolveLoras: the request's `lora` list); absent =
   * the model's own (defaultLoras). Empty = the base weights.
   */
  loras?: RunnerLora[];
}

/**
 * Who one completion runs for, taken once where the request's context is current (CompletionService.attempts) and
 * shared by its attempts.
 */
interface CallerOfRun {
  /** The cache scope key (RunnerRequest.cacheScope); undefined = shared. */
  scope: string | undefined;
  /** Told the prompt size and every generated token (the request hooks). */
  tracker?: GenerationTracker;
  /**
   * Reserves the prompt + output limit against the principal's token limits before the runner generates anything
   * (a refusal fails the run with a 429 error), settled with the real usage; undefined = not counted.
   */
  meter?: TokenMeter;
  /**
   * Who the generation runs for at the runner's slot gate, passed after the reservation (lease.slots: the runner's
   * slots, slotGatePermits; the others wait in weighted fair order
   * across principals).
   */
  ticket: FairTicket;
}

/** Tokens reserved for the reply when a context is grown and the request sets no num_predict / max_tokens. */
export const GROWN_CONTEXT_REPLY_TOKENS = 1024;

/** Grown contexts are rounded up to a multiple of this many tokens. */
export const GROWN_CONTEXT_STEP = 1024;

/** The prompt's messages as traces record them with the content opt-in (generate: its system and prompt). */
function messagesOf(source: PromptSource): Array<{ role: string; content: string }> {
  if (source.kind === 'chat') return source.cmd.messages;
  const { system, prompt } = source.cmd;
  return [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: prompt }];
}

/** Nanoseconds since `startedAt`. */
export function elapsedNs(startedAt: bigint): number {
  return Number(process.hrtime.bigint() - startedAt);
}

/**
 * Runs one completion on a scheduled runner — the part generate and chat share: option merge, runner spec, acquire
 * (load) through the scheduler, the prompt stage (PromptService) with the lease's runner, token streaming, and the
 * final metrics. Returns a cold Observable: subscribing starts the work, unsubscribing cancels the generation and
 * releases the runner.
 */
@Injectable()
export class CompletionService {
  private readonly logger = new Logger(CompletionService.name);

  private readonly hooks: GenerationHooksRegistry;

  constructor(
    private readonly config: DaemonConfig,
    private readonly scheduler: SchedulerService,
    private readonly prompts: PromptService,
    @Optional() hooks?: GenerationHooksRegistry,
    @Optional() @Inject(TOKEN_BUDGET) private readonly tokenBudget?: TokenBudget,
  ) {
    this.hooks = hooks ?? new GenerationHooksRegistry();
  }

  /**
   * The effective options and the runner spec a request would use.
   * @param caps the caller's policy caps (num_ctx at most `max_context`, num_predict at most `max_output_tokens`;
   *   option-caps.ts); default: the current request context's policy. A capped value is logged at debug level.
   */
  plan(
    model: ResolvedModel,
    options: OptionMap,
    caps: OptionCaps | undefined = currentRequestContext()?.policy?.limits,
  ): { options: EffectiveOptions; spec: RunnerSpec } {
    const kv = kvCacheSettings(this.config);
    const parallel = parallelPlan(this.config.numParallel);
    const defaults: OptionDefaults = {
      contextLength: this.config.contextLength,
      threads: this.config.threads,
      rpcServers: this.config.rpcServers,
      trainContext: model.facts.contextLength,
      flashAttention: kv.flashAttention,
      kvCacheType: kv.kvCacheType,
      hasDraft: model.draftPath !== undefined,
      draftFixed: this.config.draftFixed,
      vision: model.projectorPaths.length > 0,
      parallel,
    };
    const effective = resolveOptions(options, model.params, { ...defaults, caps });
    if (caps?.max_context !== undefined || caps?.max_output_tokens !== undefined) {
      this.logCaps(model, resolveOptions(options, model.params, defaults), effective);
    }
    return {
      options: effective,
      spec: {
        modelPath: model.modelPath,
        ...parallel,
        maxLoras: this.config.maxLoras,
        ...(ramCacheShareBytes(this.config) > 0 ? { cacheRamBytes: ramCacheShareBytes(this.config) } : {}),
        ...effective.load,
        ...(model.projectorPaths.length > 0 ? { projectorPath: model.projectorPaths[0] } : {}),
        ...(model.draftPath !== undefined ? { draftModelPath: model.draftPath } : {}),
      },
    };
  }

  /** Logs (debug) the options a policy's caps lowered. */
  private logCaps(model: ResolvedModel, uncapped: EffectiveOptions, capped: EffectiveOptions): void {
    const changes: string[] = [];
    if (capped.load.numCtx !== uncapped.load.numCtx) {
      changes.push(`num_ctx ${uncapped.load.numCtx} → ${capped.load.numCtx} (max_context)`);
    }
    if (capped.sampling.numPredict !== uncapped.sampling.numPredict) {
      changes.push(`num_predict ${uncapped.sampling.numPredict} → ${capped.sampling.numPredict} (max_output_tokens)`);
    }
    if (changes.length > 0) {
      this.logger.debug(`${model.shortName}: capped by the caller's policy: ${changes.join(', ')}`);
    }
  }

  /**
   * Streams the completion: `delta` events for every non-empty text piece, then one `done` with metrics
   * (reference/ollama-api.md §3.2: load_duration = scheduler/load wait, total_duration = handler start → final
   * event, counts and durations from the runner). Every generation (not the load-only shortcut) is reported to the
   * request hooks: start on subscribe, first token, end on the done event, an error or the unsubscribe.
   */
  complete(request: CompletionRequest): Observable<GenerationEvent> {
    const kind = request.prompt?.kind;
    if (request.loadOnly || !kind) return this.attempts(request);
    return new Observable<GenerationEvent>((subscriber) => {
      const tracker = this.hooks.begin(request.model.shortName, kind, request.startedAt);
      const content = this.config.tracing.captureContent ? request.prompt : undefined;
      if (content) tracker.trace?.captureContent(messagesOf(content));
      const inner = this.attempts(request, tracker).subscribe({
        next: (event) => {
          if (event.kind === 'delta' && event.text) tracker.trace?.outputText(event.text);
          if (event.kind === 'done' && event.metrics) tracker.finish(event.metrics, event.reason);
          subscriber.next(event);
        },
        error: (err: unknown) => {
          tracker.fail(err);
          subscriber.error(err);
        },
        complete: () => subscriber.complete(),
      });
      return () => {
        inner.unsubscribe();
        tracker.cancel();
      };
    });
  }

  /**
   * {@link complete} without the hooks: one run, and with `growContext` a second one with a larger context. Called
   * where the request's context is current (the subscribe of complete()): the cache scope and the slot gate's ticket
   * (principal and weight) are taken from it here, not later in a callback that another request's release may run.
   */
  private attempts(request: CompletionRequest, tracker?: GenerationTracker): Observable<GenerationEvent> {
    const context = currentRequestContext();
    const scope = cacheScopeKey(cacheScopeMode(this.config), context?.principal);
    // The caps too are taken here, where the request's context is current (a retry below runs in a runner callback);
    // `{}` = none, so that plan() does not look for a context later.
    if (request.caps === undefined) request = { ...request, caps: context?.policy?.limits ?? {} };
    const caller: CallerOfRun = {
      scope,
      tracker,
      meter: this.tokenBudget?.forCurrentRequest(),
      ticket: fairTicket(context?.principal, context?.policy?.limits?.weight),
    };
    const first = this.run(request, request.options, caller, false);
    if (!request.growContext) return first;
    return first.pipe(
      catchError((err: unknown) => {
        if (!(err instanceof ContextLengthExceededError) || err.promptTokens === undefined) {
          return throwError(() => err);
        }
        const promptTokens = err.promptTokens;
        return from(this.grownContext(request, promptTokens, err.contextSize ?? 0)).pipe(
          mergeMap((numCtx) => {
            this.logger.log(
              `${request.model.shortName}: ${promptTokens}-token prompt does not fit; reloading with num_ctx ${numCtx}`,
            );
            const options = { ...request.options, num_ctx: numCtx };
            return this.run({ ...request, growContext: false }, options, caller, true);
          }),
        );
      }),
    );
  }

  /**
   * The context (tokens per slot) to reload with for a prompt that did not fit: prompt + the reply's tokens
   * (num_predict, else {@link GROWN_CONTEXT_REPLY_TOKENS}), at least twice the current context so a growing
   * conversation does not reload every turn, rounded up to {@link GROWN_CONTEXT_STEP}, and capped at the largest
   * context allowed: the model's trained context, OLLAMA_CONTEXT_LENGTH when it is set, and the caller's `max_context`. When the reply does not
   * fit under the cap the cap is used (the answer may end with `length`).
   * @throws ContextLengthExceededError (400) when the prompt alone does not fit under the cap, or when memory does
   *   not allow the context (the scheduler's estimate); the message names the prompt size and the context size.
   */
  async grownContext(request: CompletionRequest, promptTokens: number, currentCtx: number): Promise<number> {
    const trained = request.model.facts.contextLength ?? 0;
    const policyCap = request.caps?.max_context ?? 0;
    const caps = [trained, this.config.contextLength, policyCap].filter((n) => n > 0);
    const limit = caps.length > 0 ? Math.min(...caps) : currentCtx;
    const capNote =
      policyCap > 0 && policyCap === limit
        ? 'the max_context of your API key'
        : this.config.contextLength > 0 && this.config.contextLength <= (trained || Infinity)
          ? 'OLLAMA_CONTEXT_LENGTH'
          : 'the model’s trained context';
    if (promptTokens >= limit) {
      throw new ContextLengthExceededError(
        `the prompt is ${promptTokens} tokens, but this model can be loaded with at most ${limit} tokens of ` +
          `context (${capNote}); shorten the prompt`,
        promptTokens,
        limit,
      );
    }
    const { options } = this.plan(request.model, request.options, request.caps);
    const reply = options.sampling.numPredict > 0 ? options.sampling.numPredict : GROWN_CONTEXT_REPLY_TOKENS;
    const wanted = Math.max(promptTokens + reply, 2 * currentCtx);
    const numCtx = Math.min(limit, Math.ceil(wanted / GROWN_CONTEXT_STEP) * GROWN_CONTEXT_STEP);
    const { spec } = this.plan(request.model, { ...request.options, num_ctx: numCtx }, request.caps);
    const fit = await this.scheduler.memoryFit(spec);
    if (!fit.fits) {
      const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
      throw new ContextLengthExceededError(
        `the prompt is ${promptTokens} tokens, more than the loaded context of ${currentCtx} tokens, and a ` +
          `${numCtx}-token context needs about ${mib(fit.neededBytes)} of memory (${mib(fit.availableBytes)} ` +
          'available); shorten the prompt or free memory',
        promptTokens,
        currentCtx,
      );
    }
    return numCtx;
  }

  /**
   * The prompt stage as a cold Observable: one PreparedPrompt, then complete. Unsubscribing aborts the stage's
   * AbortSignal, so it stops between renders, tokenizations and grammar conversions (its RequestCancelledError then
   * goes nowhere).
   */
  private preparePrompt(
    source: PromptSource,
    model: ResolvedModel,
    runner: Runner,
    options: EffectiveOptions,
  ): Observable<PreparedPrompt> {
    return new Observable<PreparedPrompt>((subscriber) => {
      const abort = new AbortController();
      this.prompts.prepare(source, model, runner, options, abort.signal).then(
        (prompt) => {
          subscriber.next(prompt);
          subscriber.complete();
        },
        (err: unknown) => subscriber.error(err),
      );
      return () => abort.abort();
    });
  }

  /**
   * One attempt of {@link complete} with these options, for `caller` (CallerOfRun); `grown` marks the reload for a
   * long prompt.
   */
  private run(
    request: CompletionRequest,
    requestOptions: OptionMap,
    caller: CallerOfRun,
    grown: boolean,
  ): Observable<GenerationEvent> {
    const { scope, tracker, meter, ticket } = caller;
    const { options, spec } = this.plan(request.model, requestOptions, request.caps);
    const acquire = {
      spec,
      keepAliveMs: request.keepAliveMs,
      acceptLargerContext: request.growContext || grown,
      modelName: request.model.shortName,
      namesRunner: request.model.adapterPaths.length === 0,
    };
    return this.scheduler.withRunner(acquire, (lease) => {
      tracker?.trace?.acquired(lease.loadDurationNs, lease.loadWindow);
      const source = request.prompt;
      if (request.loadOnly || !source) return of<GenerationEvent>({ kind: 'done', reason: 'load' });
      // The prompt is prepared asynchronously (template rendering, tokenizing and grammar conversion run off the JS
      // thread); an unsubscribe meanwhile (the client went away) aborts the prompt stage before its next step and
      // never starts the generation.
      return this.preparePrompt(source, request.model, lease.runner, options).pipe(
        switchMap((prompt) => {
          tracker?.trace?.promptReady();
          const generated: number[] = [];
          const parser = prompt.parser;
          const s = options.sampling;
          const numCtx = options.load.numCtx;
          const loras = request.loras ?? defaultLoras(request.model);
          return new Observable<GenerationEvent>((subscriber) => {
            // Told here, once the tokens are reserved and a slot is free: a refused request never counts its prompt
            // as used, and a compat layer never starts its stream (message_start, the 200 head) for it.
            request.observer?.onPrompt?.(prompt.tokens.length);
            tracker?.prompt(prompt.tokens.length);
            const traced = { maxTokens: s.numPredict, temperature: s.temperature, topP: s.topP, topK: s.topK };
            const traceparent = tracker?.trace?.generating(prompt.tokens.length, { ...traced, seed: s.seed });
            return lease.runner
              .generate({
                tokens: prompt.tokens,
                ...(prompt.media ? { media: prompt.media } : {}),
                maxAudioSeconds: this.config.maxAudioSeconds,
                // §4.1: -1 = unbounded, capped at 10 × num_ctx.
                numPredict: s.numPredict < 0 ? 10 * numCtx : s.numPredict,
                shift: request.shift ?? true,
                numKeep: s.numKeep,
                stop: [...s.stop, ...(prompt.stops ?? []).filter((x) => x !== '' && !s.stop.includes(x))],
                ...(request.topLogprobs !== undefined ? { logprobs: request.topLogprobs } : {}),
                ...(options.draft ? { draft: options.draft } : {}),
                ...(scope !== undefined ? { cacheScope: scope } : {}),
                ...(loras.length > 0 ? { loras } : {}),
                ...(traceparent ? { traceparent } : {}),
                sampling: {
                  temperature: s.temperature,
                  topK: s.topK,
                  topP: s.topP,
                  minP: s.minP,
                  typicalP: s.typicalP,
                  repeatPenalty: s.repeatPenalty,
                  repeatLastN: s.repeatLastN < 0 ? numCtx : s.repeatLastN,
                  presencePenalty: s.presencePenalty,
                  frequencyPenalty: s.frequencyPenalty,
                  seed: s.seed,
                  ...(prompt.grammar
                    ? {
                        grammar: prompt.grammar,
                        grammarLazy: prompt.grammarLazy ?? false,
                        grammarTriggers: prompt.grammarTriggers ?? [],
                        preservedTokens: prompt.preservedTokens ?? [],
                        ...(prompt.grammarPrefill ? { grammarPrefill: prompt.grammarPrefill } : {}),
                      }
                    : prompt.preservedTokens && prompt.preservedTokens.length > 0
                      ? { preservedTokens: prompt.preservedTokens }
                      : {}),
                },
              })
              .subscribe({
                next: (event) => {
                  if (event.kind === 'token') {
                    generated.push(event.token);
                    tracker?.token();
                    const logprobs: Logprob[] | undefined = event.logprob
                      ? [
                          {
                            token: event.logprob.token,
                            logprob: event.logprob.logprob,
                            bytes: event.logprob.bytes,
                            topLogprobs: event.logprob.topLogprobs,
                          },
                        ]
                      : undefined;
                    if (!parser) {
                      if (event.text !== '' || logprobs) subscriber.next({ kind: 'delta', text: event.text, logprobs });
                      return;
                    }
                    const d = parser.add(event.text);
                    if (!isEmptyDelta(d) || logprobs) {
                      subscriber.next({
                        kind: 'delta',
                        text: d.content,
                        ...(d.thinking ? { thinking: d.thinking } : {}),
                        ...(d.toolCalls.length > 0 ? { toolCalls: d.toolCalls } : {}),
                        ...(logprobs ? { logprobs } : {}),
                      });
                    }
                    return;
                  }
                  if (event.runner) tracker?.trace?.runnerReport(event.runner);
                  if (event.timings.slot !== undefined) tracker?.trace?.slot(event.timings.slot);
                  const tail = parser?.finish();
                  const metrics: GenerationMetrics = {
                    totalDurationNs: elapsedNs(request.startedAt),
                    loadDurationNs: lease.loadDurationNs,
                    promptEvalCount: event.timings.promptEvalCount,
                    promptCachedCount: event.timings.promptCachedCount,
                    promptEvalDurationNs: event.timings.promptEvalDurationNs,
                    evalCount: event.timings.evalCount,
                    evalDurationNs: event.timings.evalDurationNs,
                  };
                  subscriber.next({
                    kind: 'done',
                    reason: event.reason,
                    metrics,
                    ...(request.returnContext ? { context: [...prompt.tokens, ...generated] } : {}),
                    ...(tail?.content ? { text: tail.content } : {}),
                    ...(tail?.thinking ? { thinking: tail.thinking } : {}),
                    ...(tail && tail.toolCalls.length > 0 ? { toolCalls: tail.toolCalls } : {}),
                    ...(event.stopString !== undefined ? { stopSequence: event.stopString } : {}),
                  });
                },
                error: (err: unknown) => subscriber.error(err),
                complete: () => subscriber.complete(),
              });
          }).pipe(
            // Inner first: the reservation (outer) is made before the generation waits at the slot gate, so a
            // refused request never queues.
            lease.slots.gated(ticket),
            withTokenReservation(
              meter,
              reservedTokens(prompt.tokens.length, s.numPredict, numCtx),
              () => prompt.tokens.length + generated.length,
            ),
          );
        }),
      );
    });
  }
}
