import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { FastifyInstance } from 'fastify';
import { concat, interval, map, Observable, of, take, throwError, timer } from 'rxjs';
import { InternalError, InvalidRequestError } from '../../../../src/common/errors';
import { ollamaErrorLine, toOllamaError } from '../../../../src/common/http/ollama-error.mapper';
import { StreamResponder } from '../../../../src/common/http/stream-responder';

/** A Fastify server whose routes stream through StreamResponder; errors rendered like the Ollama filter. */
describe('StreamResponder', () => {
  let app: FastifyInstance;
  let base: string;
  let unsubscribed = 0;
  const responder = new StreamResponder();

  before(async () => {
    app = Fastify();
    app.setErrorHandler((err, _req, reply) => {
      const { status, message } = toOllamaError(err);
      void reply.status(status).send({ error: message });
    });
    app.get('/ok', (_req, reply) => responder.ndjson(reply, of({ n: 1 }, { n: 2 }, { done: true }), ollamaErrorLine));
    app.get('/early-error', (_req, reply) =>
      responder.ndjson(
        reply,
        throwError(() => new InvalidRequestError('bad input')),
        ollamaErrorLine,
      ),
    );
    app.get('/late-error', (_req, reply) =>
      responder.ndjson(
        reply,
        concat(
          of({ n: 1 }),
          throwError(() => new InternalError('broke mid-stream')),
        ),
        ollamaErrorLine,
      ),
    );
    app.get('/endless', (_req, reply) =>
      responder.ndjson(
        reply,
        new Observable<object>((sub) => {
          const s = interval(5)
            .pipe(map((n) => ({ n })))
            .subscribe(sub);
          return () => {
            unsubscribed++;
            s.unsubscribe();
          };
        }),
        ollamaErrorLine,
      ),
    );
    app.get('/big', (_req, reply) =>
      responder.ndjson(
        reply,
        interval(0).pipe(
          take(200),
          map((n) => ({ n, pad: 'x'.repeat(64 * 1024) })),
        ),
        ollamaErrorLine,
      ),
    );
    app.get('/big-then-error', (_req, reply) =>
      responder.ndjson(
        reply,
        concat(
          of(...Array.from({ length: 100 }, (_, n) => ({ n, pad: 'y'.repeat(64 * 1024) }))),
          throwError(() => new InternalError('after a burst')),
        ),
        ollamaErrorLine,
      ),
    );
    app.get('/json', (_req, reply) => responder.json(reply, timer(5).pipe(map(() => ({ last: true })))));
    app.get('/json-error', (_req, reply) =>
      responder.json(
        reply,
        throwError(() => new InvalidRequestError('nope')),
      ),
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    const addr = app.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  });

  after(async () => {
    await app.close();
  });

  it('writes NDJSON with the right content type, one object per line', async () => {
    const res = await fetch(`${base}/ok`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    assert.equal(await res.text(), '{"n":1}\n{"n":2}\n{"done":true}\n');
  });

  it('turns an error before the first event into a normal JSON error', async () => {
    const res = await fetch(`${base}/early-error`);
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: 'bad input' });
  });

  it('ends with an {"error"} line when the stream fails after it began', async () => {
    const res = await fetch(`${base}/late-error`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '{"n":1}\n{"error":"broke mid-stream"}\n');
  });

  it('unsubscribes when the client goes away', async () => {
    const controller = new AbortController();
    const res = await fetch(`${base}/endless`, { signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(unsubscribed, 1);
  });

  it('delivers every line of a stream larger than the socket buffers (backpressure)', async () => {
    const res = await fetch(`${base}/big`);
    const reader = res.body!.getReader();
    const chunks: Uint8Array[] = [];
    // Read slowly at first so that writes hit backpressure.
    await new Promise((r) => setTimeout(r, 200));
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    const lines = Buffer.concat(chunks).toString('utf8').trimEnd().split('\n');
    assert.equal(lines.length, 200);
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { n: number }).n),
      Array.from({ length: 200 }, (_, i) => i),
    );
  });

  it('keeps values waiting for drain before the error line', async () => {
    const res = await fetch(`${base}/big-then-error`);
    await new Promise((r) => setTimeout(r, 100));
    const lines = (await res.text()).trimEnd().split('\n');
    assert.equal(lines.length, 101);
    assert.deepEqual(JSON.parse(lines[100]), { error: 'after a burst' });
    assert.equal((JSON.parse(lines[99]) as { n: number }).n, 99);
  });

  it('sends the last value as one JSON object', async () => {
    const res = await fetch(`${base}/json`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await res.json(), { last: true });
  });

  it('rejects for the filter when the single-object source fails', async () => {
    const res = await fetch(`${base}/json-error`);
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: 'nope' });
  });
});
