import { createHash } from 'node:crypto';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { Connection, isLoopbackUrl } from './host';
import { ProgressView } from './progress';

/** Expands `~` and resolves a FROM/ADAPTER value against the Modelfile's directory. */
export function resolveModelfilePath(value: string, modelfileDir: string): string {
  let v = value;
  if (v === '~' || v.startsWith('~/')) v = join(homedir(), v.slice(1));
  return isAbsolute(v) ? v : resolve(modelfileDir, v);
}

/** sha256 of a file as `sha256:<hex>`. */
export async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}

/**
 * Uploads a local file as a blob unless the server has it (HEAD then POST /api/blobs/:digest, as Ollama's CLI
 * does); returns its digest. The `ollama` client has no blob call, so this one request goes through fetch with the
 * same headers.
 */
export async function uploadBlob(conn: Connection, path: string, view?: ProgressView): Promise<string> {
  const digest = await fileDigest(path);
  const url = `${conn.baseUrl}/api/blobs/${digest}`;
  const head = await fetch(url, { method: 'HEAD', headers: conn.headers });
  if (head.ok) return digest;
  const total = statSync(path).size;
  let completed = 0;
  const status = `copying file ${digest}`;
  const body = Readable.toWeb(
    createReadStream(path).on('data', (c) => {
      completed += (c as Buffer).length;
      view?.update({ status, digest, total, completed });
    }),
  ) as ReadableStream;
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...conn.headers, 'content-type': 'application/octet-stream' },
    body,
    duplex: 'half',
  } as RequestInit);
  if (!res.ok) {
    const text = await res.text();
    let message = text;
    try {
      message = (JSON.parse(text) as { error?: string }).error ?? text;
    } catch {
      // not JSON
    }
    throw new Error(message || `blob upload failed: ${res.status}`);
  }
  return digest;
}

/**
 * Prepares a Modelfile for POST /api/create's `modelfile` field: FROM/ADAPTER/DRAFT values that name existing local files
 * are resolved relative to the Modelfile's directory; when the server is not on this machine they are uploaded as
 * blobs and replaced by `@sha256:<hex>`. Other lines are sent as written (the server parses the Modelfile).
 */
export async function prepareModelfile(
  conn: Connection,
  text: string,
  modelfilePath: string,
  view?: ProgressView,
): Promise<string> {
  const dir = dirname(resolve(modelfilePath));
  const remote = !isLoopbackUrl(conn.baseUrl);
  const lines = text.split(/\r?\n/);
  const out: string[] = [];
  for (const line of lines) {
    const m = /^(\s*)(from|adapter|draft)([ \t]+)(.*?)\s*$/i.exec(line);
    if (!m) {
      out.push(line);
      continue;
    }
    let value = m[4];
    const quoted = /^"(.*)"$/.exec(value);
    if (quoted) value = quoted[1];
    const path = resolveModelfilePath(value, dir);
    const looksLikePath = /^[./~]/.test(value) || isAbsolute(value) || /\.(gguf|bin|safetensors)$/i.test(value);
    if (!looksLikePath || !existsSync(path) || statSync(path).isDirectory()) {
      out.push(line);
      continue;
    }
    const replacement = remote ? `@${await uploadBlob(conn, path, view)}` : path;
    out.push(`${m[1]}${m[2]}${m[3]}${replacement}`);
  }
  return out.join('\n');
}
