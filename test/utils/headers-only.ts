import { request as httpRequest } from 'node:http';

/** What {@link headersOnly} got back. */
export interface HeadersOnlyAnswer {
  status: number;
  body: string;
}

/**
 * Sends only the headers of a request that announces `declared` body bytes, and resolves with the response (status,
 * body) as soon as it comes, or rejects after 5 s. The body is never written: an answer proves the daemon decided
 * without reading it (authorization, roles, rate limits: docs/security.md "Order of checks").
 * @param headers added to `content-type: application/json` and the `content-length` of `declared`.
 */
export function headersOnly(
  baseUrl: string,
  method: string,
  path: string,
  declared: number,
  headers: Record<string, string> = {},
): Promise<HeadersOnlyAnswer> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      method,
      path: url.pathname,
      headers: { 'content-type': 'application/json', ...headers, 'content-length': String(declared) },
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`${method} ${path}: no answer before the body was sent`));
    }, 5000);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.flushHeaders();
  });
}
