/** Reads a whole NDJSON response body into objects (one per non-empty line). */
export async function readNdjson<T = Record<string, unknown>>(response: Response): Promise<T[]> {
  const text = await response.text();
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as T);
}

/** POSTs JSON to `url` and returns the fetch Response. */
export function postJson(url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

/**
 * Registers `model` from a Modelfile through POST /api/create (not streamed) on the server at `baseUrl`, and fails
 * the test unless it answers 200.
 */
export async function createModel(baseUrl: string, model: string, modelfile: string): Promise<void> {
  const res = await postJson(`${baseUrl}/api/create`, { model, modelfile, stream: false });
  if (res.status !== 200) throw new Error(`create ${model}: ${res.status} ${await res.text()}`);
}
