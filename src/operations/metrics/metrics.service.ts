import { Inject, Injectable, OnModuleDestroy, Optional } from '@nestjs/common';
import { DaemonConfig } from '../../config';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { SchedulerService, SchedulerStats } from '../../scheduler';
import { GenerationEndInfo, GenerationHooksRegistry } from '../../observability';
import { HttpObservation, HttpRequestSink, RequestContext } from '../../observability';
import { UsageCounters } from '../usage/usage-counters';
import { UsageService } from '../usage/usage.service';
import { EventLoopDelayMonitor, EventLoopDelaySummary } from './event-loop-delay';
import { registerModelServerGauges } from './model-server-metrics';
import { PerTokenHistogram } from './per-token-histogram';

/** Upper bounds of `llamad_http_request_duration_seconds`, s (streams may last minutes). */
export const HTTP_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Upper bounds of `llamad_time_to_first_token_seconds`, s (a cold start includes the model load). */
export const TTFT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Upper bounds of `llamad_inter_token_seconds`, s. */
export const INTER_TOKEN_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3, 0.6, 1.2, 2.5];

/**
 * The application's Prometheus metrics (docs/observability.md lists them), in a Registry of its own — never
 * prom-client's global one, so two applications in one process do not clash — with prom-client's default process
 * collectors. Counters and histograms are fed by the request hooks (tokens, time to first token), a per-token
 * observer (inter-token gaps, allocation-free) and the HTTP observation (requests); the scheduler gauges are read when
 * scraped (`collect()`), with the inference gateway's per-model gauges under vLLM's names (model-server-metrics.ts),
 * and so is the event-loop delay summary (event-loop-delay.ts; its monitor stops with the
 * module). Each finished request also goes to the UsageService (the usage store) and the per-caller usage counters
 * (usage-counters.ts), with the labels the UsageService bounded.
 */
@Injectable()
export class MetricsService implements HttpRequestSink, OnModuleDestroy {
  /** The registry GET /metrics renders. */
  readonly registry = new Registry();
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly promptTokens: Counter<'model'>;
  private readonly generatedTokens: Counter<'model'>;
  private readonly cachedTokens: Counter<'model'>;
  private readonly ttft: Histogram<'model'>;
  private readonly interToken: PerTokenHistogram;
  private readonly usageCounters: UsageCounters;
  private readonly unregister: Array<() => void> = [];
  /** The scheduler's state for the scrape in progress (every gauge of one scrape reads the same snapshot). */
  private snapshot?: SchedulerStats;

  constructor(
    hooks: GenerationHooksRegistry,
    private readonly scheduler: SchedulerService,
    observation: HttpObservation,
    @Optional() @Inject(DaemonConfig) config?: DaemonConfig,
    @Optional() private readonly usage?: UsageService,
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({
      name: 'llamad_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status (499: the client left first).',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'llamad_http_request_duration_seconds',
      help: 'HTTP request duration, from arrival to the end of the response (streams included), seconds.',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_DURATION_BUCKETS,
      registers,
    });
    this.promptTokens = new Counter({
      name: 'llamad_prompt_tokens_total',
      help: 'Prompt tokens of finished generations and embeddings, reused from the KV cache or evaluated.',
      labelNames: ['model'],
      registers,
    });
    this.cachedTokens = new Counter({
      name: 'llamad_prompt_cached_tokens_total',
      help: 'Prompt tokens reused from the KV cache instead of evaluated (part of llamad_prompt_tokens_total).',
      labelNames: ['model'],
      registers,
    });
    this.generatedTokens = new Counter({
      name: 'llamad_generated_tokens_total',
      help: 'Tokens generated (cancelled and failed generations included).',
      labelNames: ['model'],
      registers,
    });
    this.ttft = new Histogram({
      name: 'llamad_time_to_first_token_seconds',
      help: 'Time from the request to its first generated token (queueing and model load included), seconds.',
      labelNames: ['model'],
      buckets: TTFT_BUCKETS,
      registers,
    });
    this.interToken = new PerTokenHistogram(
      'llamad_inter_token_seconds',
      'Time between two consecutive generated tokens of one generation, seconds.',
      'model',
      INTER_TOKEN_BUCKETS,
      registers,
    );
    this.usageCounters = new UsageCounters(registers);
    this.gauges(registers);
    registerModelServerGauges(registers, () => this.stats());
    this.runnerCounters(registers);
    const eventLoop = new EventLoopDelayMonitor(config?.eventLoopWindowMs);
    new EventLoopDelaySummary(eventLoop, registers);
    this.unregister.push(() => eventLoop.stop());

    this.unregister.push(
      hooks.register({
        onFirstToken: (info) => this.ttft.observe({ model: info.model }, info.timeToFirstTokenMs / 1000),
        onGenerationEnd: (info) => this.countTokens(info),
      }),
      hooks.registerInterTokenObserver((model) => this.interToken.child(model)),
    );
    observation.sink = this;
    this.unregister.push(() => {
      if (observation.sink === this) observation.sink = undefined;
    });
  }

  /** The content type of {@link render} (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text of every metric. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * Counts one finished HTTP request (called by the HTTP observation hook); with its context, also its caller's usage
   * (a request with a principal: the usage store and the `llamad_usage_*` counters).
   */
  observeHttp(method: string, route: string, status: number, seconds: number, context?: RequestContext): void {
    const labels = { method, route, status: String(status) };
    this.httpRequests.inc(labels);
    this.httpDuration.observe(labels, seconds);
    const entry = context && this.usage?.record(context);
    if (entry) this.usageCounters.count(entry);
  }

  /** Stops feeding the metrics (hooks and HTTP sink removed). */
  onModuleDestroy(): void {
    for (const undo of this.unregister.splice(0)) undo();
  }

  private countTokens(info: GenerationEndInfo): void {
    const labels = { model: info.model };
    if (info.promptTokens > 0) this.promptTokens.inc(labels, info.promptTokens);
    if (info.cachedTokens > 0) this.cachedTokens.inc(labels, info.cachedTokens);
    if (info.completionTokens > 0) this.generatedTokens.inc(labels, info.completionTokens);
    // Series exist from the first generation on, so rate() sees them start at 0.
    if (info.promptTokens === 0) this.promptTokens.inc(labels, 0);
    if (info.cachedTokens === 0) this.cachedTokens.inc(labels, 0);
    if (info.completionTokens === 0) this.generatedTokens.inc(labels, 0);
  }

  /**
   * Runner lifecycle counters, fed by the scheduler's runnerEvents$: starts and restarts (a start after the model's
   * previous runner died) per model, crashes per model and cause ('abort' | 'signal' | 'exit' | 'oom' | 'hang').
   */
  private runnerCounters(registers: Registry[]): void {
    const starts = new Counter({
      name: 'llamad_runner_starts_total',
      help: 'Runners started (models loaded), by model.',
      labelNames: ['model'] as const,
      registers,
    });
    const restarts = new Counter({
      name: 'llamad_runner_restarts_total',
      help: 'Runners started again after the previous runner of the model died, by model.',
      labelNames: ['model'] as const,
      registers,
    });
    const crashes = new Counter({
      name: 'llamad_runner_crashes_total',
      help: 'Runner processes that died on their own, by model and cause (abort, signal, exit, oom, hang).',
      labelNames: ['model', 'cause'] as const,
      registers,
    });
    const subscription = this.scheduler.runnerEvents$?.subscribe((event) => {
      if (event.kind === 'crash') {
        crashes.inc({ model: event.model, cause: event.cause });
        return;
      }
      starts.inc({ model: event.model });
      if (event.restart) restarts.inc({ model: event.model });
    });
    this.unregister.push(() => subscription?.unsubscribe());
  }

  /** The scheduler's stats, read once per scrape (dropped after the current tick). */
  private stats(): SchedulerStats {
    if (!this.snapshot) {
      this.snapshot = this.scheduler.stats();
      queueMicrotask(() => (this.snapshot = undefined));
    }
    return this.snapshot;
  }

  /** The scheduler gauges, each read at scrape time. */
  private gauges(registers: Registry[]): void {
    const stats = () => this.stats();
    new Gauge({
      name: 'llamad_requests_queued',
      help: 'Requests waiting for a model load or for a free slot (all models; per model: vllm:num_requests_waiting).',
      registers,
      collect() {
        this.set(stats().queued);
      },
    });
    new Gauge({
      name: 'llamad_requests_running',
      help:
        'Requests holding a loaded model and a slot (generating, embedding or counting tokens; all models; per ' +
        'model: vllm:num_requests_running).',
      registers,
      collect() {
        this.set(stats().running);
      },
    });
    new Gauge({
      name: 'llamad_models_loaded',
      help: 'Models loaded in memory.',
      registers,
      collect() {
        this.set(stats().runners.length);
      },
    });
    const perModel = (name: string, help: string, value: (r: SchedulerStats['runners'][number]) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['model'],
        registers,
        collect() {
          this.reset();
          for (const r of stats().runners) this.set({ model: r.model }, value(r));
        },
      });
    perModel(
      'llamad_kv_cache_cells_used',
      'KV cache cells held by generations in flight (their prompt and generated tokens; cells idle slots keep for ' +
        'prefix reuse are not counted).',
      (r) => r.kvCellsUsed,
    );
    perModel(
      'llamad_kv_cache_cells_total',
      'KV cache size, cells (num_ctx × slots; num_ctx when the slots share one cache, OLLAMA_NUM_PARALLEL unset).',
      (r) => r.kvCellsTotal,
    );
    perModel('llamad_slots_busy', 'Slots decoding a generation.', (r) => r.slotsBusy);
    perModel(
      'llamad_slots_waiting',
      'Busy slots whose generation waits for cells of the shared KV cache (paused until running ones finish).',
      (r) => r.slotsWaiting,
    );
    perModel(
      'llamad_prompt_cache_ram_entries',
      'Conversations (KV sequences) the host-RAM prompt cache keeps for prefix reuse (LLAMAD_CACHE_RAM).',
      (r) => r.ramCacheEntries,
    );
    perModel(
      'llamad_prompt_cache_ram_bytes',
      'Bytes of KV state the host-RAM prompt cache keeps.',
      (r) => r.ramCacheBytes,
    );
    perModel(
      'llamad_prompt_cache_ram_hits',
      'Prompts that started from a KV sequence restored from the host-RAM prompt cache, since the model was loaded.',
      (r) => r.ramCacheHits,
    );
    perModel(
      'llamad_prompt_cache_ram_tokens',
      'Prompt tokens restored from the host-RAM prompt cache instead of being evaluated, since the model was loaded.',
      (r) => r.ramCacheTokens,
    );
    perModel(
      'llamad_slots_total',
      'Slots of the loaded model (OLLAMA_NUM_PARALLEL at load; 4 sharing one KV cache when unset).',
      (r) => r.slotsTotal,
    );
    // Counters of the loaded runners (they restart from 0 when a model is loaded again, as Prometheus counters may).
    const perModelCount = (name: string, help: string, value: (r: SchedulerStats['runners'][number]) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['model'],
        registers,
        collect() {
          this.reset();
          for (const r of stats().runners) this.inc({ model: r.model }, value(r));
        },
      });
    perModelCount(
      'llamad_draft_tokens_total',
      'Speculative decoding: tokens drafted (by the draft model or n-gram lookup) and verified by the loaded model.',
      (r) => r.draftTokens,
    );
    perModelCount(
      'llamad_draft_accepted_tokens_total',
      'Speculative decoding: drafted tokens the model sampled too (each saved one decode step).',
      (r) => r.draftAccepted,
    );
  }
}
