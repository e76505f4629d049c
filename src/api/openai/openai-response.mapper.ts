import { randomBytes } from 'node:crypto';
import { map, merge, Observable, OperatorFunction } from 'rxjs';
import type {
  EmbedResult,
  GenerationEvent,
  GenerationMetrics,
  Logprob,
  ModelContextLength,
  ToolCall,
} from '../../generation';
import { MediaType, ModelName, type ListedModel, type ResolvedModel } from '../../models';
import { newToolCallId } from './openai-request.mapper';
import {
  OpenAIChatCompletion,
  OpenAIChatCompletionChunk,
  OpenAIChatDelta,
  OpenAICompletion,
  OpenAIEmbeddingResponse,
  OpenAIFinishReason,
  OpenAILogprob,
  OpenAIModel,
  OpenAIToolCall,
  OpenAIUsage,
} from './openai.types';

/**
 * Domain results → OpenAI responses (reference/ollama-api.md §12.2–§12.5): the non-stream reducers, the chunk
 * converters behind the SSE streams, embeddings and models. Pure apart from ids and timestamps.
 */

export const SYSTEM_FINGERPRINT = 'fp_ollama';

/** A response id: `<prefix>-` + 24 hex characters. */
export function newCompletionId(prefix: 'chatcmpl' | 'cmpl'): string {
  return `${prefix}-${randomBytes(12).toString('hex')}`;
}

/** Now in Unix seconds. */
export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}

/** Ids and timestamp shared by every chunk of one response. */
export interface ResponseMeta {
  id: string;
  created: number;
  model: string;
}

/**
 * Usage (tokens) from the final metrics (OpenAI CompletionUsage): `prompt_tokens` = the whole prompt
 * (`promptEvalCount`: reused + evaluated, so a repeated request reports the same size),
 * `prompt_tokens_details.cached_tokens` = its part reused from the KV cache (`promptCachedCount`),
 * `completion_tokens` = tokens generated; zeros when absent (the load shortcut).
 */
export function toUsage(metrics: GenerationMetrics | undefined): OpenAIUsage {
  const prompt = metrics?.promptEvalCount ?? 0;
  const completion = metrics?.evalCount ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: metrics?.promptCachedCount ?? 0 },
  };
}

/** The sum of several usages (tokens), for a /v1/completions request with several prompts. */
export function sumUsage(usages: OpenAIUsage[]): OpenAIUsage {
  const sum = (f: (u: OpenAIUsage) => number) => usages.reduce((n, u) => n + f(u), 0);
  return {
    prompt_tokens: sum((u) => u.prompt_tokens),
    completion_tokens: sum((u) => u.completion_tokens),
    total_tokens: sum((u) => u.total_tokens),
    prompt_tokens_details: { cached_tokens: sum((u) => u.prompt_tokens_details.cached_tokens) },
  };
}

/** `length` stays `length`; a stop with tool calls is `tool_calls`; everything else (stop, load, unload) `stop`. */
export function finishReason(reason: string, sawToolCalls: boolean): OpenAIFinishReason {
  if (reason === 'length') return 'length';
  return sawToolCalls ? 'tool_calls' : 'stop';
}

/** Domain logprobs → OpenAI `logprobs.content` entries. */
export function toOpenAILogprobs(logprobs: Logprob[]): OpenAILogprob[] {
  return logprobs.map((l) => ({
    token: l.token,
    logprob: l.logprob,
    bytes: l.bytes,
    top_logprobs: l.topLogprobs.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  }));
}

/** A domain tool call → OpenAI's (arguments as JSON text; a missing id gets a fresh `call_…`). */
export function toOpenAIToolCall(call: ToolCall, index: number): OpenAIToolCall {
  return {
    id: call.id ?? newToolCallId(),
    index,
    type: 'function',
    function: { name: call.function.name, arguments: JSON.stringify(call.function.arguments) },
  };
}

/**
 * Folds chat events into one `chat.completion` (non-stream answer): content, reasoning and tool calls concatenated
 * in order, finish reason and usage from `done`. `logprobs.content` is present only when `withLogprobs`.
 */
export function toChatCompletion(
  meta: ResponseMeta,
  withLogprobs: boolean,
): OperatorFunction<GenerationEvent, OpenAIChatCompletion> {
  return (source$) =>
    new Observable<OpenAIChatCompletion>((subscriber) => {
      let content = '';
      let reasoning = '';
      const calls: OpenAIToolCall[] = [];
      const logprobs: OpenAILogprob[] = [];
      const take = (text?: string, thinking?: string, toolCalls?: ToolCall[]) => {
        content += text ?? '';
        reasoning += thinking ?? '';
        for (const c of toolCalls ?? []) calls.push(toOpenAIToolCall(c, calls.length));
      };
      return source$.subscribe({
        next: (e) => {
          if (e.kind === 'delta') {
            take(e.text, e.thinking, e.toolCalls);
            if (e.logprobs) logprobs.push(...toOpenAILogprobs(e.logprobs));
            return;
          }
          take(e.text, e.thinking, e.toolCalls);
          subscriber.next({
            id: meta.id,
            object: 'chat.completion',
            created: meta.created,
            model: meta.model,
            system_fingerprint: SYSTEM_FINGERPRINT,
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content,
                  ...(reasoning ? { reasoning } : {}),
                  ...(calls.length > 0 ? { tool_calls: calls } : {}),
                },
                finish_reason: finishReason(e.reason, calls.length > 0),
                logprobs: withLogprobs ? { content: logprobs } : null,
              },
            ],
            usage: toUsage(e.metrics),
          });
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => subscriber.complete(),
      });
    });
}

/**
 * Chat events → `chat.completion.chunk`s (§12.2 streaming): the first chunk's delta carries `role: "assistant"`
 * (an empty-content role chunk is made when the model produced nothing); thinking and content of one event are
 * two chunks (reasoning first); tool calls are complete (`id`, `type`, `function.name`, full JSON arguments) with a
 * running `index`; then one finish chunk (`delta: {}`, finish_reason stop|length|tool_calls); then, with
 * `includeUsage`, a usage chunk with `choices: []`.
 */
export function toChatCompletionChunks(
  meta: ResponseMeta,
  opts: { includeUsage: boolean; withLogprobs: boolean },
): OperatorFunction<GenerationEvent, OpenAIChatCompletionChunk> {
  return (source$) =>
    new Observable<OpenAIChatCompletionChunk>((subscriber) => {
      let sentRole = false;
      let toolCount = 0;
      const chunk = (
        delta: OpenAIChatDelta,
        finish: OpenAIFinishReason | null,
        logprobs?: OpenAILogprob[],
      ): OpenAIChatCompletionChunk => {
        if (!sentRole) {
          sentRole = true;
          delta = { role: 'assistant', ...delta };
        }
        return {
          id: meta.id,
          object: 'chat.completion.chunk',
          created: meta.created,
          model: meta.model,
          system_fingerprint: SYSTEM_FINGERPRINT,
          choices: [
            {
              index: 0,
              delta,
              finish_reason: finish,
              ...(opts.withLogprobs && logprobs ? { logprobs: { content: logprobs } } : {}),
            },
          ],
        };
      };
      const emitParts = (text?: string, thinking?: string, toolCalls?: ToolCall[], logprobs?: Logprob[]) => {
        const lp = logprobs && logprobs.length > 0 ? toOpenAILogprobs(logprobs) : undefined;
        if (thinking) subscriber.next(chunk({ content: '', reasoning: thinking }, null));
        const calls = (toolCalls ?? []).map((c) => toOpenAIToolCall(c, toolCount++));
        if (text || calls.length > 0 || lp) {
          subscriber.next(chunk({ content: text ?? '', ...(calls.length > 0 ? { tool_calls: calls } : {}) }, null, lp));
        }
      };
      return source$.subscribe({
        next: (e) => {
          emitParts(e.text, e.thinking, e.toolCalls, e.kind === 'delta' ? e.logprobs : undefined);
          if (e.kind !== 'done') return;
          if (!sentRole) subscriber.next(chunk({ content: '' }, null));
          subscriber.next(chunk({}, finishReason(e.reason, toolCount > 0)));
          if (opts.includeUsage) {
            subscriber.next({
              id: meta.id,
              object: 'chat.completion.chunk',
              created: meta.created,
              model: meta.model,
              system_fingerprint: SYSTEM_FINGERPRINT,
              choices: [],
              usage: toUsage(e.metrics),
            });
          }
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => subscriber.complete(),
      });
    });
}

function completionObject(
  meta: ResponseMeta,
  text: string,
  finish: OpenAIFinishReason | null,
  index: number,
): OpenAICompletion {
  return {
    id: meta.id,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ text, index, finish_reason: finish, logprobs: null }],
  };
}

/** How many prompts of one /v1/completions request run at once (the runner's slots take them as they free up). */
export const COMPLETION_PROMPT_CONCURRENCY = 4;

/** A generate event tagged with the position of its prompt (= the choice index). */
interface IndexedEvent {
  index: number;
  event: GenerationEvent;
}

/** The events of every prompt, tagged with its index, at most COMPLETION_PROMPT_CONCURRENCY prompts at once. */
function indexedEvents(sources: Observable<GenerationEvent>[]): Observable<IndexedEvent> {
  return merge(
    ...sources.map((source$, index) => source$.pipe(map((event): IndexedEvent => ({ index, event })))),
    COMPLETION_PROMPT_CONCURRENCY,
  );
}

/**
 * Folds the generate events of each prompt into one `text_completion` (§12.3): one choice per prompt (`index` = its
 * position in `sources`, choices in index order) with its text and finish reason, usage summed over the prompts
 * (tokens). Emits once every prompt is done.
 * @param sources one cold event stream per prompt (GenerateService.generate), subscribed a few at a time.
 */
export function toCompletion(meta: ResponseMeta, sources: Observable<GenerationEvent>[]): Observable<OpenAICompletion> {
  return new Observable<OpenAICompletion>((subscriber) => {
    const texts = sources.map(() => '');
    const finishes: OpenAIFinishReason[] = sources.map(() => 'stop');
    const usages: OpenAIUsage[] = [];
    return indexedEvents(sources).subscribe({
      next: ({ index, event: e }) => {
        texts[index] += e.text ?? '';
        if (e.kind !== 'done') return;
        finishes[index] = finishReason(e.reason, false);
        usages.push(toUsage(e.metrics));
      },
      error: (err: unknown) => subscriber.error(err),
      complete: () => {
        subscriber.next({
          ...completionObject(meta, '', null, 0),
          choices: texts.map((text, index) => ({ text, index, finish_reason: finishes[index], logprobs: null })),
          usage: sumUsage(usages),
        });
        subscriber.complete();
      },
    });
  });
}

/**
 * Generate events of each prompt → streamed `text_completion` chunks (§12.3), each carrying its prompt's choice
 * `index`: one per non-empty text, a final chunk per prompt with `text: ""` and its finish reason (prompts run
 * concurrently, so chunks of different choices may interleave), then with `includeUsage` one `choices: []` chunk
 * with the usage summed over the prompts (tokens).
 * @param sources one cold event stream per prompt (GenerateService.generate).
 */
export function toCompletionChunks(
  meta: ResponseMeta,
  sources: Observable<GenerationEvent>[],
  includeUsage: boolean,
): Observable<OpenAICompletion> {
  return new Observable<OpenAICompletion>((subscriber) => {
    const usages: OpenAIUsage[] = [];
    return indexedEvents(sources).subscribe({
      next: ({ index, event: e }) => {
        if (e.text) subscriber.next(completionObject(meta, e.text, null, index));
        if (e.kind !== 'done') return;
        subscriber.next(completionObject(meta, '', finishReason(e.reason, false), index));
        usages.push(toUsage(e.metrics));
      },
      error: (err: unknown) => subscriber.error(err),
      complete: () => {
        if (includeUsage) {
          subscriber.next({ ...completionObject(meta, '', null, 0), choices: [], usage: sumUsage(usages) });
        }
        subscriber.complete();
      },
    });
  });
}

/**
 * A model's context sizes → the `/v1/models` fields (beyond OpenAI and Ollama): `context_length` = the context a
 * request gets (loaded runner's num_ctx per slot, else the default a load would use), `max_context_length` = the
 * trained context (omitted when unknown). Names: OpenRouter's `context_length` (what coding agents read to size their
 * compaction) and LM Studio's `max_context_length` (its REST API's maximum).
 */
export function toContextFields(ctx: ModelContextLength): Pick<OpenAIModel, 'context_length' | 'max_context_length'> {
  return {
    context_length: ctx.contextLength,
    ...(ctx.maxContextLength !== undefined ? { max_context_length: ctx.maxContextLength } : {}),
  };
}

/** A vector as base64 of its little-endian float32 bytes (what the SDK decodes by default). */
export function toBase64Float32(vector: number[]): string {
  const buf = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => buf.writeFloatLE(v, i * 4));
  return buf.toString('base64');
}

/** EmbedResult → the embeddings list (§12.4); usage counts the embedded tokens. */
export function toEmbeddingResponse(
  model: string,
  result: EmbedResult,
  encoding: 'float' | 'base64',
): OpenAIEmbeddingResponse {
  return {
    object: 'list',
    data: result.embeddings.map((v, index) => ({
      object: 'embedding',
      embedding: encoding === 'base64' ? toBase64Float32(v) : v,
      index,
    })),
    model,
    usage: { prompt_tokens: result.promptEvalCount, total_tokens: result.promptEvalCount },
  };
}

/** A listed model → `/v1/models` entry (§12.5): id = display name, created = manifest mtime (s), owner = namespace. */
export function toOpenAIModel(id: string, modifiedAt: Date, namespace: string): OpenAIModel {
  return { id, object: 'model', created: Math.floor(modifiedAt.getTime() / 1000), owned_by: namespace };
}

/**
 * `/v1/models` (§12.5), with adapters shown the way vLLM lists its LoRA modules (beyond Ollama): a model with ADAPTER
 * layers runs on the runner of its base weights (one per weights blob) and gets `parent` = the model over the same
 * weights without adapters (the newest one listed, which is the name /api/ps gives that runner; omitted when none is
 * listed, e.g. hidden by the caller's model list) and `root` = its first adapter blob digest. Other models keep
 * Ollama's `{id, object, created, owned_by}`.
 * @param models the listed models (newest first, already filtered for the caller), ModelsService.list.
 */
export function toOpenAIModelList(models: ListedModel[]): OpenAIModel[] {
  return models.map((m) => ({
    ...toOpenAIModel(m.name, m.modifiedAt, ModelName.parse(m.name)?.namespace ?? 'library'),
    ...adapterFields(m.weightsDigest, m.adapterDigests ?? [], models),
  }));
}

/**
 * `/v1/models/:model` entry: the id exactly as requested, `root`/`parent` as in {@link toOpenAIModelList}.
 * @param listed the models the caller sees (ModelsService.list), read for `parent`; only needed when `m` has adapters.
 */
export function fromResolvedModel(id: string, m: ResolvedModel, listed: ListedModel[] = []): OpenAIModel {
  const adapters = m.manifest.layers.filter((l) => l.mediaType === MediaType.ADAPTER).map((l) => l.digest);
  return { ...toOpenAIModel(id, m.modifiedAt, m.name.namespace), ...adapterFields(m.modelDigest, adapters, listed) };
}

/** `root` and `parent` of a model with these weights and adapters (nothing when it has no adapters). */
function adapterFields(
  weightsDigest: string | undefined,
  adapterDigests: string[],
  listed: ListedModel[],
): Pick<OpenAIModel, 'root' | 'parent'> {
  if (adapterDigests.length === 0) return {};
  const parent = listed
    .filter((b) => b.weightsDigest === weightsDigest && (b.adapterDigests ?? []).length === 0)
    .reduce<ListedModel | undefined>((best, b) => (!best || b.modifiedAt > best.modifiedAt ? b : best), undefined);
  return { root: adapterDigests[0], ...(parent ? { parent: parent.name } : {}) };
}
