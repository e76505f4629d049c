import { Injectable } from '@nestjs/common';
import { InvalidRequestError, ModelNotFoundError, RequestCancelledError } from '../common/errors';
import { OptionMap } from '../common/options';
import { KeepAliveMs } from '../common/time';
import { ModelsService } from '../models';
import { Runner } from '../runner';
import { runLeasedJob, SchedulerService } from '../scheduler';
import { CompletionService } from './completion.service';
import { INPUT_TOO_LONG_MESSAGE } from './embed.service';

/** A rerank request in domain form (the Jina/Cohere shape llama-server serves at /rerank). */
export interface RerankCommand {
  model: string;
  query: string;
  documents: string[];
  /** Keep the best `topN` (default: all). */
  topN?: number;
  options: OptionMap;
  keepAliveMs?: KeepAliveMs;
  signal?: AbortSignal;
}

export interface RerankResult {
  /** Best first: index into `documents` and the model's relevance score. */
  results: { index: number; relevanceScore: number }[];
  /** Tokens evaluated over all (query, document) pairs. */
  promptTokens: number;
}

/** The 400 for a model that is not a reranker. */
export function notRerankerMessage(model: string): string {
  return `model "${model}" is not a reranking model (its GGUF pooling_type is not rank)`;
}

/**
 * Tokens of one (query, document) pair as llama-server builds them (tools/server format_prompt_rerank): the GGUF's
 * `tokenizer.chat_template.rerank` with `{query}` / `{document}` replaced (tokenized without added specials, special
 * text parsed) when the model has one; else `tokenize(query, addSpecial)` — [BOS] query [EOS] [SEP] as the
 * vocabulary adds them (BERT: [CLS] query [SEP]) — then the document, then EOS when the vocabulary adds EOS.
 */
export async function rerankTokens(runner: Runner, query: string, document: string): Promise<number[]> {
  const template = runner.info.rerankTemplate;
  if (template) {
    const prompt = template.split('{query}').join(query).split('{document}').join(document);
    return runner.tokenize(prompt, { addSpecial: false, parseSpecial: true });
  }
  const head = await runner.tokenize(query, { addSpecial: true, parseSpecial: false });
  const body = await runner.tokenize(document, { addSpecial: false, parseSpecial: false });
  const tail = runner.info.addEos && runner.info.eos !== undefined && runner.info.eos >= 0 ? [runner.info.eos] : [];
  return [...head, ...body, ...tail];
}

/** Sorts by score, best first (stable: equal scores keep document order), and keeps `topN` when it is > 0. */
export function rankResults(scores: number[], topN?: number): { index: number; relevanceScore: number }[] {
  const ranked = scores
    .map((relevanceScore, index) => ({ index, relevanceScore }))
    .sort((a, b) => b.relevanceScore - a.relevanceScore || a.index - b.index);
  return topN !== undefined && topN > 0 ? ranked.slice(0, topN) : ranked;
}

/**
 * /api/rerank and /v1/rerank (beyond Ollama): scores each document against the query with a reranker (GGUF
 * pooling_type rank, e.g. bge-reranker): every pair is embedded in ONE runner.embed() call, whose output for a rank
 * pooled context is the classifier's scores (the first is the relevance score, unnormalized as llama-server's).
 */
@Injectable()
export class RerankService {
  constructor(
    private readonly models: ModelsService,
    private readonly completion: CompletionService,
    private readonly scheduler: SchedulerService,
  ) {}

  /**
   * @throws ModelNotFoundError (404), InvalidRequestError (not a reranker; a pair longer than the context),
   *   load errors, RequestCancelledError.
   */
  async rerank(cmd: RerankCommand): Promise<RerankResult> {
    if (!cmd.model) throw new ModelNotFoundError('');
    const model = await this.models.resolve(
      cmd.model,
      () => `model ${JSON.stringify(cmd.model)} not found, try pulling it first`,
    );
    const { spec } = this.completion.plan(model, cmd.options);
    return runLeasedJob(
      this.scheduler,
      { spec, keepAliveMs: cmd.keepAliveMs, modelName: model.shortName },
      async (lease, abort): Promise<RerankResult> => {
        const runner = lease.runner;
        if (!runner.info.reranker) throw new InvalidRequestError(notRerankerMessage(cmd.model), 'model');
        const inputs: number[][] = [];
        for (const doc of cmd.documents) {
          const tokens = await rerankTokens(runner, cmd.query, doc);
          if (tokens.length > runner.slotContext) throw new InvalidRequestError(INPUT_TOO_LONG_MESSAGE, 'documents');
          inputs.push(tokens);
        }
        if (abort.aborted) throw new RequestCancelledError();
        const outputs = inputs.length > 0 ? await runner.embed(inputs, abort) : [];
        return {
          results: rankResults(
            outputs.map((v) => v[0] ?? 0),
            cmd.topN,
          ),
          promptTokens: inputs.reduce((n, t) => n + t.length, 0),
        };
      },
      cmd.signal,
    );
  }
}
