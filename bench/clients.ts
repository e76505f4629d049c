/**
 * Streaming HTTP clients for `npm run bench`: one request to the daemon's Ollama API (NDJSON) or to llama-server's
 * native API (SSE), with the client-side arrival time of every chunk that carries text and the server's own counts.
 * Times are milliseconds from performance.now(); the server's durations are converted to milliseconds.
 */
import { performance } from 'node:perf_hooks';

/** What one streamed request looked like from the client. */
export interface StreamTiming {
  /** When the request was sent (ms). */
  sentAt: number;
  /** Arrival time (ms) of each chunk with non-empty text, in order. */
  tokenTimes: number[];
  /** When the response body ended (ms). */
  endAt: number;
  /** Generated tokens as the server counted them. */
  evalCount: number;
  /** Prompt tokens the server evaluated (after any cache reuse on llama-server: its prompt_n). */
  promptCount: number;
  /** Server-reported prompt evaluation time (ms). */
  promptMs: number;
  /** Server-reported generation time (ms). */
  evalMs: number;
  /** llama-server only, with speculative decoding: tokens drafted and drafted tokens accepted (its timings). */
  draftN?: number;
  draftAccepted?: number;
}

/** Client-side time to first token (ms). */
export function ttft(t: StreamTiming): number {
  return t.tokenTimes.length > 0 ? t.tokenTimes[0] - t.sentAt : NaN;
}

/** Client-side decode rate: tokens after the first ÷ time from first to last token (tokens/s). */
export function decodeRate(t: StreamTiming): number {
  const n = t.tokenTimes.length;
  if (n < 2) return NaN;
  const seconds = (t.tokenTimes[n - 1] - t.tokenTimes[0]) / 1000;
  return (Math.max(t.evalCount, n) - 1) / seconds;
}

type ChunkParser = (line: string, timing: StreamTiming, at: number) => void;

async function stream(
  url: string,
  body: unknown,
  parse: ChunkParser,
  headers: Record<string, string> = {},
): Promise<StreamTiming> {
  const timing: StreamTiming = {
    sentAt: performance.now(),
    tokenTimes: [],
    endAt: NaN,
    evalCount: 0,
    promptCount: 0,
    promptMs: NaN,
    evalMs: NaN,
  };
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  await forEachLine(url, res, (line, at) => parse(line, timing, at));
  timing.endAt = performance.now();
  return timing;
}

/**
 * Reads a streamed response (NDJSON or SSE) line by line: `onLine` gets every non-empty trimmed line with the
 * arrival time (ms, performance.now()) of the chunk that completed it; a last line without a newline at the end.
 * @throws Error naming `what` and the status when the response is not 2xx.
 */
export async function forEachLine(
  what: string,
  res: Response,
  onLine: (line: string, at: number) => void,
): Promise<void> {
  if (!res.ok || !res.body) throw new Error(`${what}: HTTP ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const at = performance.now();
    pending += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      if (line !== '') onLine(line, at);
    }
  }
  if (pending.trim() !== '') onLine(pending.trim(), performance.now());
}

const NS_PER_MS = 1e6;

function ollamaChunk(textOf: (record: Record<string, unknown>) => unknown): ChunkParser {
  return (line, timing, at) => {
    const record = JSON.parse(line) as Record<string, unknown>;
    if (typeof record.error === 'string') throw new Error(`daemon: ${record.error}`);
    const text = textOf(record);
    if (typeof text === 'string' && text !== '') timing.tokenTimes.push(at);
    if (record.done === true) {
      timing.evalCount = Number(record.eval_count ?? 0);
      timing.promptCount = Number(record.prompt_eval_count ?? 0);
      timing.promptMs = Number(record.prompt_eval_duration ?? NaN) / NS_PER_MS;
      timing.evalMs = Number(record.eval_duration ?? NaN) / NS_PER_MS;
    }
  };
}

/**
 * POST /api/generate on the daemon with stream: true; `headers` are added to the request (an API key).
 * @throws Error on an HTTP or in-stream error.
 */
export function ollamaGenerate(
  base: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<StreamTiming> {
  return stream(
    `${base}/api/generate`,
    { ...body, stream: true },
    ollamaChunk((r) => r.response),
    headers,
  );
}

/** POST /api/chat on the daemon with stream: true. @throws Error on an HTTP or in-stream error. */
export function ollamaChat(base: string, body: Record<string, unknown>): Promise<StreamTiming> {
  return stream(
    `${base}/api/chat`,
    { ...body, stream: true },
    ollamaChunk((r) => (r.message as { content?: string } | undefined)?.content),
  );
}

interface LlamaServerTimings {
  prompt_n?: number;
  prompt_ms?: number;
  predicted_n?: number;
  predicted_ms?: number;
  draft_n?: number;
  draft_n_accepted?: number;
}

function llamaServerChunk(textOf: (record: Record<string, unknown>) => unknown): ChunkParser {
  return (line, timing, at) => {
    if (!line.startsWith('data:')) return;
    const data = line.slice(5).trim();
    if (data === '[DONE]') return;
    const record = JSON.parse(data) as Record<string, unknown>;
    if (record.error) throw new Error(`llama-server: ${JSON.stringify(record.error)}`);
    const text = textOf(record);
    if (typeof text === 'string' && text !== '') timing.tokenTimes.push(at);
    const t = record.timings as LlamaServerTimings | undefined;
    if (t && t.predicted_n !== undefined) {
      timing.evalCount = t.predicted_n;
      timing.promptCount = t.prompt_n ?? 0;
      timing.promptMs = t.prompt_ms ?? NaN;
      timing.evalMs = t.predicted_ms ?? NaN;
      timing.draftN = t.draft_n;
      timing.draftAccepted = t.draft_n_accepted;
    }
  };
}

/** POST /completion on llama-server with stream: true. @throws Error on an HTTP or in-stream error. */
export function llamaCompletion(base: string, body: Record<string, unknown>): Promise<StreamTiming> {
  return stream(
    `${base}/completion`,
    { ...body, stream: true },
    llamaServerChunk((r) => r.content),
  );
}

/** POST /v1/chat/completions on llama-server with stream: true. @throws Error on an HTTP or in-stream error. */
export function llamaChat(base: string, body: Record<string, unknown>): Promise<StreamTiming> {
  return stream(
    `${base}/v1/chat/completions`,
    { ...body, stream: true },
    llamaServerChunk((r) => {
      const choices = r.choices as { delta?: { content?: string } }[] | undefined;
      return choices?.[0]?.delta?.content;
    }),
  );
}

/**
 * POST a JSON body and return the parsed JSON answer with the client-side wall time (ms).
 * @throws Error on a non-2xx status.
 */
export async function postJson(url: string, body: unknown): Promise<{ json: unknown; ms: number }> {
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${text.slice(0, 500)}`);
  return { json: JSON.parse(text) as unknown, ms };
}
