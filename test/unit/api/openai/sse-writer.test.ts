import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { FastifyInstance } from 'fastify';
import { concat, of, throwError } from 'rxjs';
import { InternalError, InvalidRequestError } from '../../../../src/common/errors';
import { openAIErrorFrame, toOpenAIError } from '../../../../src/api/openai/openai-error';
import { writeSse } from '../../../../src/api/openai/sse-writer';

/** writeSse over a bare Fastify server: golden SSE framing, early and late errors. */
describe('SSE writer (OpenAI framing)', () => {
  let app: FastifyInstance;
  let base: string;

  before(async () => {
    app = Fastify();
    app.setErrorHandler((err, _req, reply) => {
      const { status, body } = toOpenAIError(err);
      void reply.status(status).send(body);
    });
    app.get('/ok', (_req, reply) => writeSse(reply, of({ n: 1 }, { n: 2 }), openAIErrorFrame));
    app.get('/early', (_req, reply) =>
      writeSse(
        reply,
        throwError(() => new InvalidRequestError('bad')),
        openAIErrorFrame,
      ),
    );
    app.get('/late', (_req, reply) =>
      writeSse(
        reply,
        concat(
          of({ n: 1 }),
          throwError(() => new InternalError('boom mid-stream')),
        ),
        openAIErrorFrame,
      ),
    );
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  });

  after(() => app.close());

  it('frames each value as `data: <json>\\n\\n` and ends with `data: [DONE]`', async () => {
    const res = await fetch(`${base}/ok`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(await res.text(), 'data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
  });

  it('an error before the first value is a real status with a JSON body', async () => {
    const res = await fetch(`${base}/early`);
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), {
      error: { message: 'bad', type: 'invalid_request_error', param: null, code: null },
    });
  });

  it('an error after the first value is one `data: {"error":…}` frame, then the end (no [DONE])', async () => {
    const res = await fetch(`${base}/late`);
    assert.equal(res.status, 200);
    assert.equal(
      await res.text(),
      'data: {"n":1}\n\ndata: {"error":{"message":"boom mid-stream","type":"api_error","param":null,"code":null}}\n\n',
    );
  });
});
