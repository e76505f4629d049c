import { request } from 'node:http';

/** What {@link sendSlowBody} saw. */
export interface SlowBodyAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Body bytes written before the response's status line arrived. */
  sentBeforeAnswer: number;
  /** The body size announced (Content-Length) or meant to be streamed (chunked). */
  announced: number;
}

/** Options of {@link sendSlowBody}. */
export interface SlowBodyOptions {
  method: string;
  /** Body size in bytes (announced as Content-Length unless `chunked`). Default 50 MB. */
  totalBytes?: number;
  /** Bytes written per step; default 64 KiB. */
  chunkBytes?: number;
  /** Pause between steps, ms; default 20 (so 50 MB would take about 16 s). */
  intervalMs?: number;
  /** Send `Transfer-Encoding: chunked` instead of a Content-Length. */
  chunked?: boolean;
  headers?: Record<string, string>;
  /** Give up (reject) when no answer came within this many ms; default 10 s. */
  timeoutMs?: number;
}

/**
 * Streams a large body slowly to `url` and resolves as soon as the server answers (it stops writing then): a server
 * that reads the body first answers only after all of it, which the timeout turns into a failure. The request has its
 * own connection (no agent), destroyed at the end.
 * @throws Error on timeout, or a connection error before any answer
 */
export function sendSlowBody(url: string, options: SlowBodyOptions): Promise<SlowBodyAnswer> {
  const total = options.totalBytes ?? 50 * 1024 * 1024;
  const chunk = Buffer.alloc(options.chunkBytes ?? 64 * 1024, 'x');
  const interval = options.intervalMs ?? 20;
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    let timer: NodeJS.Timeout | undefined;
    const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
    if (!options.chunked) headers['content-length'] = String(total);
    const req = request(url, { method: options.method, headers, agent: false });
    const deadline = setTimeout(() => {
      req.destroy();
      reject(
        new Error(`${options.method} ${url}: no answer within ${options.timeoutMs ?? 10_000} ms (${sent} bytes sent)`),
      );
    }, options.timeoutMs ?? 10_000);
    const finish = (err?: Error, answer?: SlowBodyAnswer) => {
      clearTimeout(deadline);
      clearTimeout(timer);
      req.destroy();
      if (answer) resolve(answer);
      else reject(err ?? new Error('no answer'));
    };
    const step = () => {
      if (answered || req.destroyed) return;
      const piece = chunk.subarray(0, Math.min(chunk.length, total - sent));
      if (piece.length === 0) {
        req.end();
        return;
      }
      sent += piece.length;
      req.write(piece);
      timer = setTimeout(step, interval);
    };
    req.on('response', (res) => {
      answered = true;
      const sentBeforeAnswer = sent;
      clearTimeout(timer);
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      const done = () =>
        finish(undefined, {
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(parts).toString('utf8'),
          sentBeforeAnswer,
          announced: total,
        });
      res.on('end', done);
      res.on('error', done);
      res.on('close', done);
    });
    req.on('error', (err) => {
      if (!answered) finish(err);
    });
    req.flushHeaders();
    step();
  });
}
