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

/**
 * Reads a streamed NDJSON response body as it arrives, calling `onRecord` per record (e.g. to act on the first
 * chunk while the stream still runs); resolves with all records once the body ends.
 */
export async function readNdjsonStream(
  res: Response,
  onRecord: (r: Record<string, unknown>) => void = () => undefined,
): Promise<Record<string, unknown>[]> {
  const records: Record<string, unknown>[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line === '') continue;
      const record = JSON.parse(line) as Record<string, unknown>;
      records.push(record);
      onRecord(record);
    }
  }
  return records;
}
