/**
 * The daemon's HTTP API as the page uses it (docs/ui.md "Architecture"): every call goes to the same origin, under
 * the prefix the page was served from (`/ui/` → ``, `/llm/ui/` → `/llm`), with the API key from sessionStorage as
 * `Authorization: Bearer` when one is set (docs/security.md "Web UI"; never in a URL).
 */

const KEY_STORAGE = 'llamad.apiKey';

/** The route prefix of the module that serves this page: the path before `/ui/`. */
export const API_BASE = location.pathname.replace(/\/ui(?:\/.*)?$/, '');

/** The API key of this tab ('' = none). */
export function apiKey(): string {
  return sessionStorage.getItem(KEY_STORAGE) ?? '';
}

/** Keeps `key` for this tab only (sessionStorage); '' forgets it. */
export function setApiKey(key: string): void {
  if (key === '') sessionStorage.removeItem(KEY_STORAGE);
  else sessionStorage.setItem(KEY_STORAGE, key);
}

/** An answer that was not 2xx: its status and the `error` text of Ollama's body (or the body itself). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();

/** Calls `listener` whenever a call is answered 401 (no key, or a wrong one); returns the unsubscribe. */
export function onUnauthorized(listener: Listener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  let message = text || res.statusText;
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === 'string') message = body.error;
    else if (body.error && typeof body.error === 'object' && 'message' in body.error) {
      message = String((body.error as { message: unknown }).message);
    }
  } catch {
    // not JSON: the text as is
  }
  if (res.status === 401) for (const listener of unauthorizedListeners) listener();
  return new ApiError(res.status, message);
}

/** fetch() of `path` under {@link API_BASE} with the key; throws ApiError when the answer is not 2xx. */
export async function call(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const key = apiKey();
  if (key !== '') headers.set('Authorization', `Bearer ${key}`);
  if (init.body !== undefined && !headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
  const res = await fetch(`${API_BASE}${path}`, { ...init, headers, cache: 'no-store' });
  if (!res.ok) throw await errorOf(res);
  return res;
}

/** A JSON call: `body` (if any) sent as JSON, the answer parsed. */
export async function json<T>(path: string, method = 'GET', body?: unknown): Promise<T> {
  const res = await call(path, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return (text === '' ? {} : JSON.parse(text)) as T;
}

/**
 * POSTs `body` and hands each line of the NDJSON answer to `onRecord` as it arrives (Ollama's streams:
 * reference/ollama-api.md §1.4). A record with `error` ends the stream with an ApiError. Aborting `signal` cancels
 * the request (the daemon sees the client leave and stops the generation).
 */
export async function streamNdjson<T extends object>(
  path: string,
  body: unknown,
  onRecord: (record: T) => void,
  signal?: AbortSignal,
): Promise<void> {
  const res = await call(path, { method: 'POST', body: JSON.stringify(body), ...(signal ? { signal } : {}) });
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = '';
  const emit = (line: string): void => {
    if (line.trim() === '') return;
    const record = JSON.parse(line) as T & { error?: string };
    if (typeof record.error === 'string') throw new ApiError(500, record.error);
    onRecord(record);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += value;
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      emit(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
    }
  }
  emit(pending);
}

/** One model of GET /api/tags. */
export interface ModelEntry {
  name: string;
  model: string;
  size: number;
  digest: string;
  modified_at: string;
  details: {
    family?: string;
    parameter_size?: string;
    quantization_level?: string;
    format?: string;
  };
  capabilities?: string[];
}

/** GET /api/tags: the models the caller may use. */
export async function listModels(): Promise<ModelEntry[]> {
  return (await json<{ models?: ModelEntry[] }>('/api/tags')).models ?? [];
}

/** Bytes as `1.2 GB` (decimal units, as Ollama's CLI). */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 1000) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}
