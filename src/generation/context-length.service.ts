import { Injectable } from '@nestjs/common';
import { ResolvedModel } from '../models';
import { SchedulerService } from '../scheduler';
import { CompletionService } from './completion.service';

/** A model's context sizes, tokens. */
export interface ModelContextLength {
  /**
   * The context of one slot: the loaded runner's num_ctx (what /api/ps reports as `context_length`) when the model's
   * weights are loaded or loading, else the num_ctx a load by this caller would use now (request none > Modelfile `num_ctx` >
   * OLLAMA_CONTEXT_LENGTH > 4096, clamped to the trained context and lowered by the caller's policy cap).
   */
  contextLength: number;
  /** The GGUF's trained context (`<arch>.context_length`); undefined when the file does not say. */
  maxContextLength?: number;
  /** Whether `contextLength` is that of a loaded (or loading) runner. */
  loaded: boolean;
}

/**
 * The context length a client can plan with (beyond Ollama: `/v1/models`' `context_length`, LM Studio issue 2139 —
 * coding agents size their compaction by it). Reads the scheduler's loaded runners (one per weights blob), then the
 * loads in flight, and otherwise plans the load as CompletionService would for a request without options. Must be
 * called in the request's context (the policy caps come from it).
 */
@Injectable()
export class ContextLengthService {
  constructor(
    private readonly scheduler: SchedulerService,
    private readonly completion: CompletionService,
  ) {}

  /** The context sizes of a resolved model (never throws: planning is pure). */
  of(model: ResolvedModel): ModelContextLength {
    const runner =
      this.scheduler.loaded().find((r) => r.spec.modelPath === model.modelPath) ??
      this.scheduler.loading().find((r) => r.spec.modelPath === model.modelPath);
    const max = model.facts.contextLength;
    const contextLength = runner ? runner.spec.numCtx : this.completion.plan(model, {}).spec.numCtx;
    return { contextLength, ...(max !== undefined && max > 0 ? { maxContextLength: max } : {}), loaded: !!runner };
  }
}
