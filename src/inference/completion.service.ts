import { Injectable, Logger } from '@nestjs/common';
import { defer, Observable, of } from 'rxjs';
import { OptionMap } from '../common/options';
import { KeepAliveMs } from '../common/time';
import { DaemonConfig } from '../config';
import { ResolvedModel } from '../models';
import type { NativeGrammarTrigger } from '../../binding';
import { GenerationEvent, GenerationMetrics, Logprob } from './generation.types';
import { EffectiveOptions, resolveOptions } from './options';
import { MediaPrompt } from './media-prompt';
import { isEmptyDelta, OutputParser } from './output-parser';
import { Runner, RunnerSpec } from './runner/runner';
import { SchedulerService } from './scheduler.service';

/** Prompt tokens ready to submit, with what the render asks of sampling and output parsing. */
export interface PreparedPrompt {
  /** Token ids, shorter than the slot context. */
  tokens: number[];
  /** GBNF grammar (format or tool calls); lazy ones only apply after a trigger. */
  grammar?: string;
  grammarLazy?: boolean;
  grammarTriggers?: NativeGrammarTrigger[];
  preservedTokens?: string[];
  /** Text the prompt ends with that a non-lazy render grammar must consume first (NativeChatRender.generationPrompt). */
  grammarPrefill?: string;
  /** Stop strings added by the template (besides the `stop` option). */
  stops?: string[];
  /** Splits the output into content / thinking / tool calls; absent = everything is content. */
  parser?: OutputParser;
  /** The prompt as text with media markers plus the images, when the request has images (`tokens` then only count). */
  media?: MediaPrompt;
}

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
  /** Builds the prompt tokens once the runner is loaded (it needs the runner's template and tokenizer). */
  buildPrompt?: (runner: Runner, options: EffectiveOptions) => PreparedPrompt;
  /** Return prompt + output token ids on the done event (generate's `context`). */
  returnContext?: boolean;
  /** Report logprobs with this many alternatives per token (0..20); undefined = none. */
  topLogprobs?: number;
}

/** Nanoseconds since `startedAt`. */
export function elapsedNs(startedAt: bigint): number {
  return Number(process.hrtime.bigint() - startedAt);
}

/**
 * Runs one completion on a scheduled runner — the part generate and chat share: option merge, runner spec, acquire
 * (load) through the scheduler, prompt building, token streaming, and the final metrics. Returns a cold Observable:
 * subscribing starts the work, unsubscribing cancels the generation and releases the runner.
 */
@Injectable()
export class CompletionService {
  private readonly logger = new Logger(CompletionService.name);
  /** Models for which the Go-template fallback was already logged. */
  private readonly templateFallbackLogged = new Set<string>();

  constructor(
    private readonly config: DaemonConfig,
    private readonly scheduler: SchedulerService,
  ) {}

  /**
   * Logs (once per model) that a Go TEMPLATE (Modelfile or request `template`) is present but no Go-template engine
   * is available (go-template.port.ts), so the GGUF Jinja template is used instead (native mode).
   */
  noteTemplateFallback(model: ResolvedModel): void {
    if (this.templateFallbackLogged.has(model.manifestDigest)) return;
    this.templateFallbackLogged.add(model.manifestDigest);
    this.logger.warn(`${model.shortName}: no Go template engine available; using the GGUF chat template instead`);
  }

  /** The effective options and the runner spec a request would use. */
  plan(model: ResolvedModel, options: OptionMap): { options: EffectiveOptions; spec: RunnerSpec } {
    const effective = resolveOptions(options, model.params, {
      contextLength: this.config.contextLength,
      threads: this.config.threads,
      trainContext: model.facts.contextLength,
    });
    return {
      options: effective,
      spec: {
        modelPath: model.modelPath,
        numParallel: this.config.numParallel,
        ...effective.load,
        ...(model.projectorPaths.length > 0 ? { projectorPath: model.projectorPaths[0] } : {}),
        ...(model.adapterPaths.length > 0 ? { adapterPaths: model.adapterPaths } : {}),
      },
    };
  }

  /**
   * Streams the completion: `delta` events for every non-empty text piece, then one `done` with metrics
   * (reference/ollama-api.md §3.2: load_duration = scheduler/load wait, total_duration = handler start → final
   * event, counts and durations from the runner).
   */
  complete(request: CompletionRequest): Observable<GenerationEvent> {
    const { options, spec } = this.plan(request.model, request.options);
    return this.scheduler.withRunner({ spec, keepAliveMs: request.keepAliveMs }, (lease) => {
      if (request.loadOnly || !request.buildPrompt) return of<GenerationEvent>({ kind: 'done', reason: 'load' });
      const buildPrompt = request.buildPrompt;
      return defer(() => {
        const prompt = buildPrompt(lease.runner, options);
        const generated: number[] = [];
        const parser = prompt.parser;
        const s = options.sampling;
        const numCtx = options.load.numCtx;
        return new Observable<GenerationEvent>((subscriber) =>
          lease.runner
            .generate({
              tokens: prompt.tokens,
              ...(prompt.media ? { media: prompt.media } : {}),
              // §4.1: -1 = unbounded, capped at 10 × num_ctx.
              numPredict: s.numPredict < 0 ? 10 * numCtx : s.numPredict,
              stop: [...s.stop, ...(prompt.stops ?? []).filter((x) => x !== '' && !s.stop.includes(x))],
              ...(request.topLogprobs !== undefined ? { logprobs: request.topLogprobs } : {}),
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
            }),
        );
      });
    });
  }
}
