import { randomBytes } from 'node:crypto';
import { Observable, OperatorFunction } from 'rxjs';
import type { EmbedResult, GenerationEvent, GenerationMetrics, Logprob, ToolCall } from '../../inference';
import type { ListedModel, ResolvedModel } from '../../models';
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

/** Usage from the final metrics (prompt_eval_count / eval_count; zeros when absent, e.g. the load shortcut). */
export function toUsage(metrics: GenerationMetrics | undefined): OpenAIUsage {
  const prompt = metrics?.promptEvalCount ?? 0;
  const completion = metrics?.evalCount ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
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

function completionObject(meta: ResponseMeta, text: string, finish: OpenAIFinishReason | null): OpenAICompletion {
  return {
    id: meta.id,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ text, index: 0, finish_reason: finish, logprobs: null }],
  };
}

/** Folds generate events into one `text_completion` with usage (§12.3). */
export function toCompletion(meta: ResponseMeta): OperatorFunction<GenerationEvent, OpenAICompletion> {
  return (source$) =>
    new Observable<OpenAICompletion>((subscriber) => {
      let text = '';
      return source$.subscribe({
        next: (e) => {
          text += e.text ?? '';
          if (e.kind === 'done') {
            subscriber.next({
              ...completionObject(meta, text, finishReason(e.reason, false)),
              usage: toUsage(e.metrics),
            });
          }
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => subscriber.complete(),
      });
    });
}

/**
 * Generate events → streamed `text_completion` chunks (§12.3): one per non-empty text, a final chunk with
 * `text: ""` and the finish reason, then with `includeUsage` a `choices: []` chunk carrying usage.
 */
export function toCompletionChunks(
  meta: ResponseMeta,
  includeUsage: boolean,
): OperatorFunction<GenerationEvent, OpenAICompletion> {
  return (source$) =>
    new Observable<OpenAICompletion>((subscriber) =>
      source$.subscribe({
        next: (e) => {
          if (e.text) subscriber.next(completionObject(meta, e.text, null));
          if (e.kind !== 'done') return;
          subscriber.next(completionObject(meta, '', finishReason(e.reason, false)));
          if (includeUsage) {
            subscriber.next({ ...completionObject(meta, '', null), choices: [], usage: toUsage(e.metrics) });
          }
        },
        error: (err: unknown) => subscriber.error(err),
        complete: () => subscriber.complete(),
      }),
    );
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

/** `/v1/models` entry of a listed model. */
export function fromListedModel(m: ListedModel, namespace: string): OpenAIModel {
  return toOpenAIModel(m.name, m.modifiedAt, namespace);
}

/** `/v1/models/:model` entry: the id exactly as requested. */
export function fromResolvedModel(id: string, m: ResolvedModel): OpenAIModel {
  return toOpenAIModel(id, m.modifiedAt, m.name.namespace);
}
