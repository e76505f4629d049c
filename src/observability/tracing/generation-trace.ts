import {
  Attributes,
  context,
  Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
  Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { RequestContext } from '../request-context';
import * as A from './gen-ai-attributes';
import { epochMs, RunnerWorkReport } from './runner-report';
import { tracerProviderRegistered } from './tracing-sdk';

/** The name of llamad's tracer (instrumentation scope). */
export const LLAMAD_TRACER_NAME = 'llamad';
const w3c = new W3CTraceContextPropagator();

/** `gen_ai.operation.name` of a generation kind. */
export function genAiOperation(kind: 'generate' | 'chat' | 'embed'): string {
  return kind === 'chat' ? 'chat' : kind === 'embed' ? 'embeddings' : 'text_completion';
}

/** The request's sampling settings, as the runner gets them (recorded as `gen_ai.request.*`). */
export interface TracedSampling {
  /** Tokens to generate at most (num_predict / max_tokens after the defaults); < 0 = unbounded (not recorded). */
  maxTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  seed: number;
}

/** How a finished, failed or cancelled generation ended (the hooks' GenerationEndInfo, the fields spans use). */
export interface TracedEnd {
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  timeToFirstTokenMs?: number;
  doneReason?: string;
  error?: string;
}

/**
 * The spans of one generation (docs/observability.md "Traces"), made by the generation hooks (GenerationTracker)
 * only when a tracer provider is registered and the generation's span is sampled: `{operation} {model}` (the GenAI
 * inference span, INTERNAL: the model runs here) under the request's HTTP span, and under it, in order,
 * `llamad.queue` (waiting for a runner), `llamad.model.load` (when this request waited for a load), `llamad.prompt`
 * (render, tokenize, fit), `llamad.slot_wait` (the runner's slot gate) and `llamad.runner.generate` (the runner's side,
 * with `llamad.prompt_eval` and `llamad.decode` under it; `gen_ai.first_token` event on decode). Phases are recorded
 * with explicit start and end times when they end, so nothing stays open across the stages; the runner side comes
 * from the runner process's own report ({@link RunnerWorkReport}) when it runs in one, else from the times the
 * daemon saw. Not one allocation per token: the first token is one clock read.
 */
export class GenerationTrace {
  /** The inference span's context: the parent of every phase span, and what the runner process gets. */
  private readonly ctx: Context;
  private phaseStart: number;
  private promptReadyAt?: number;
  private generateAt?: number;
  private firstTokenAt?: number;
  private report?: RunnerWorkReport;
  /** The reply's text so far, only with the content opt-in ({@link captureContent}). */
  private output?: string;

  private constructor(
    private readonly tracer: Tracer,
    private readonly span: Span,
    private readonly model: string,
    startedAt: number,
  ) {
    this.ctx = trace.setSpan(ROOT_CONTEXT, span);
    this.phaseStart = startedAt;
  }

  /**
   * Starts the inference span of a generation, or returns undefined (nothing recorded, nothing allocated but this
   * check) when no tracer provider is registered or the span is not sampled.
   * @param startedAt epoch ms when the request's handler started.
   * @param request the HTTP request's context (its span is the parent; else the active context, e.g. a host app's).
   */
  static start(
    kind: 'generate' | 'chat' | 'embed',
    model: string,
    startedAt: number,
    request: RequestContext | undefined,
  ): GenerationTrace | undefined {
    if (!tracerProviderRegistered()) return undefined;
    const operation = genAiOperation(kind);
    const attributes: Attributes = {
      [A.GEN_AI_OPERATION_NAME]: operation,
      [A.GEN_AI_PROVIDER_NAME]: A.LLAMAD_PROVIDER_NAME,
      [A.GEN_AI_REQUEST_MODEL]: model,
    };
    if (request) attributes[A.LLAMAD_REQUEST_ID] = request.id;
    if (request?.principalName !== undefined) attributes[A.LLAMAD_PRINCIPAL] = request.principalName;
    // Set only when streaming (the conventions' rule); embeddings never stream.
    if (kind !== 'embed' && request?.stream === true) attributes[A.GEN_AI_REQUEST_STREAM] = true;
    const parent = request?.trace ?? context.active();
    // Asked for per generation (the SDK caches it): a provider registered again later is followed.
    const tracer = trace.getTracer(LLAMAD_TRACER_NAME);
    const span = tracer.startSpan(
      `${operation} ${model}`,
      { kind: SpanKind.INTERNAL, startTime: startedAt, attributes },
      parent,
    );
    if (!span.isRecording()) return undefined;
    return new GenerationTrace(tracer, span, model, startedAt);
  }

  private phase(name: string, start: number, end: number, attributes?: Attributes, parent = this.ctx): Span {
    const span = this.tracer.startSpan(name, { kind: SpanKind.INTERNAL, startTime: start, attributes }, parent);
    span.end(Math.max(start, end));
    return span;
  }

  /**
   * The scheduler handed out a runner after `waitNs` of waiting: records `llamad.queue` and, when a load ended during
   * the wait, `llamad.model.load` (from the load's start, or the wait's when it joined a load under way).
   * @param loadWindow the runner's load, [start, end] in `performance.now()` ms, when known.
   */
  acquired(waitNs: number, loadWindow?: readonly [number, number]): void {
    const nowPerf = performance.now();
    const now = performance.timeOrigin + nowPerf;
    const start = now - waitNs / 1e6;
    const toEpoch = (perf: number) => performance.timeOrigin + perf;
    if (loadWindow && toEpoch(loadWindow[1]) >= start) {
      const loadStart = Math.max(start, toEpoch(loadWindow[0]));
      this.phase(A.SPAN_QUEUE, start, loadStart);
      this.phase(A.SPAN_MODEL_LOAD, loadStart, toEpoch(loadWindow[1]), { [A.LLAMAD_MODEL_LOADED]: true });
    } else {
      this.phase(A.SPAN_QUEUE, start, now);
    }
    this.phaseStart = now;
  }

  /** The prompt stage finished (rendered, tokenized, fitted): records `llamad.prompt`. */
  promptReady(): void {
    const now = epochMs();
    this.phase(A.SPAN_PROMPT, this.phaseStart, now);
    this.promptReadyAt = now;
  }

  /**
   * The generation got its slot and is submitted: records `llamad.slot_wait` and the request's sampling, and returns
   * the W3C `traceparent` that the runner's side goes under (RunnerRequest.traceparent).
   */
  generating(promptTokens: number, sampling: TracedSampling): string {
    const now = epochMs();
    this.phase(A.SPAN_SLOT_WAIT, this.promptReadyAt ?? this.phaseStart, now);
    this.generateAt = now;
    const attributes: Attributes = {
      [A.LLAMAD_PROMPT_TOKENS]: promptTokens,
      [A.GEN_AI_REQUEST_TEMPERATURE]: sampling.temperature,
      [A.GEN_AI_REQUEST_TOP_P]: sampling.topP,
      [A.GEN_AI_REQUEST_TOP_K]: sampling.topK,
      [A.GEN_AI_REQUEST_SEED]: sampling.seed,
    };
    if (sampling.maxTokens >= 0) attributes[A.GEN_AI_REQUEST_MAX_TOKENS] = sampling.maxTokens;
    this.span.setAttributes(attributes);
    const carrier: Record<string, string> = {};
    w3c.inject(this.ctx, carrier, defaultTextMapSetter);
    return carrier.traceparent ?? '';
  }

  /** The first generated token arrived (the daemon's clock). */
  firstToken(): void {
    this.firstTokenAt ??= epochMs();
  }

  /** The runner's slot (0-based) that ran the generation (`llamad.slot` on the inference span). */
  slot(slot: number): void {
    this.span.setAttribute(A.LLAMAD_SLOT, slot);
  }

  /** The runner process's report of its side (comes with its `done` event, before {@link end}). */
  runnerReport(report: RunnerWorkReport): void {
    this.report = report;
  }

  /**
   * The content opt-in (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, TracingSettings.captureContent):
   * records the prompt's messages as `gen_ai.input.messages` (the conventions' JSON: role and text parts) and from now
   * on collects the reply for `gen_ai.output.messages`. Never called by default: spans then carry no text.
   */
  captureContent(messages: ReadonlyArray<{ role: string; content: string }>): void {
    const input = messages.map((m) => ({ role: m.role, parts: [{ type: 'text', content: m.content }] }));
    this.span.setAttribute(A.GEN_AI_INPUT_MESSAGES, JSON.stringify(input));
    this.output = '';
  }

  /** A piece of the reply (kept only after {@link captureContent}). */
  outputText(text: string): void {
    if (this.output !== undefined) this.output += text;
  }

  /**
   * The generation ended: records the runner's side (when it ran), the usage and finish attributes, and ends the
   * inference span (status error on a failure; a cancellation is `llamad.cancelled`, not an error).
   */
  end(info: TracedEnd): void {
    const now = epochMs();
    this.recordRunnerSide(now, info.doneReason !== undefined);
    const span = this.span;
    const attributes: Attributes = {
      [A.GEN_AI_USAGE_INPUT_TOKENS]: info.promptTokens,
      [A.GEN_AI_USAGE_OUTPUT_TOKENS]: info.completionTokens,
      [A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: info.cachedTokens,
      [A.LLAMAD_CACHED_TOKENS]: info.cachedTokens,
      [A.LLAMAD_PROMPT_EVAL_TOKENS]: Math.max(0, info.promptTokens - info.cachedTokens),
      [A.GEN_AI_RESPONSE_MODEL]: this.model,
    };
    if (info.timeToFirstTokenMs !== undefined) {
      attributes[A.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = info.timeToFirstTokenMs / 1000;
    }
    if (info.doneReason) attributes[A.GEN_AI_RESPONSE_FINISH_REASONS] = [info.doneReason];
    if (this.output !== undefined) {
      const parts = [{ type: 'text', content: this.output }];
      const message = { role: 'assistant', parts, finish_reason: info.doneReason ?? 'error' };
      attributes[A.GEN_AI_OUTPUT_MESSAGES] = JSON.stringify([message]);
    }
    if (info.error === 'cancelled') attributes[A.LLAMAD_CANCELLED] = true;
    else if (info.error !== undefined) {
      attributes[A.ERROR_TYPE] = '_OTHER';
      span.setStatus({ code: SpanStatusCode.ERROR, message: info.error });
    }
    span.setAttributes(attributes);
    span.end(now);
  }

  /**
   * `llamad.runner.generate` with `llamad.prompt_eval` and `llamad.decode` under it, when a generation was submitted:
   * from the runner process's report (`llamad.runner.kind` `process`, its pid), else from the times the daemon saw —
   * an in-process runner's finished generation (`inprocess`, the daemon's pid), or a generation that failed or was
   * cancelled before any report (no kind, no pid: it may have run in either).
   */
  private recordRunnerSide(now: number, finished: boolean): void {
    const report = this.report;
    let parent = this.ctx;
    let start: number;
    let first: number | undefined;
    let end: number;
    const attributes: Attributes = {};
    if (report) {
      // The runner process's own times, under the span its echoed traceparent names.
      parent = w3c.extract(ROOT_CONTEXT, { traceparent: report.traceparent }, defaultTextMapGetter);
      ({ receivedAt: start, firstTokenAt: first, endedAt: end } = report);
      attributes[A.LLAMAD_RUNNER_PID] = report.pid;
      attributes[A.LLAMAD_RUNNER_KIND] = 'process';
    } else if (this.generateAt !== undefined) {
      start = this.generateAt;
      first = this.firstTokenAt;
      end = now;
      if (finished) {
        attributes[A.LLAMAD_RUNNER_PID] = process.pid;
        attributes[A.LLAMAD_RUNNER_KIND] = 'inprocess';
      }
    } else {
      return;
    }
    const runner = this.tracer.startSpan(
      A.SPAN_RUNNER,
      { kind: SpanKind.INTERNAL, startTime: start, attributes },
      parent,
    );
    const inner = trace.setSpan(ROOT_CONTEXT, runner);
    const evalEnd = first ?? end;
    this.phase(A.SPAN_PROMPT_EVAL, start, evalEnd, undefined, inner);
    if (first !== undefined) {
      const decode = this.tracer.startSpan(A.SPAN_DECODE, { kind: SpanKind.INTERNAL, startTime: first }, inner);
      decode.addEvent(A.GEN_AI_FIRST_TOKEN_EVENT, first);
      decode.end(Math.max(first, end));
    }
    runner.end(Math.max(start, end));
  }
}
