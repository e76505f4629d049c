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
