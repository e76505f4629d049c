import Fastify from 'fastify';
import assert from 'node:assert/strict';
import { IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { describe, it } from 'node:test';
import {
  createHttpLogger,
  createNestLogger,
  createRootLogger,
  currentRequestContext,
  installHttpObservation,
  RequestContext,
  requestContextStorage,
  requestLogFields,
} from '../../../src/observability';

function capture() {
  const lines: string[] = [];
  return {
    lines,
    destination: { write: (l: string) => void lines.push(l) },
    json: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('createRootLogger', () => {
  it('writes JSON lines at the level asked, with ISO time and the current request id', () => {
    const out = capture();
    const root = createRootLogger({ level: 'info', destination: out.destination });
    root.debug('hidden');
    root.info('outside');
    requestContextStorage.run(new RequestContext('rid-7', 'GET', '/x'), () => root.warn({ a: 1 }, 'inside'));
    const [outside, inside] = out.json();
    assert.equal(out.lines.length, 2);
    assert.equal(outside.msg, 'outside');
    assert.equal(outside.reqId, undefined);
    assert.match(String(outside.time), /^\d{4}-\d\d-\d\dT/);
    assert.equal(inside.reqId, 'rid-7');
    assert.equal(inside.a, 1);
    assert.equal(inside.level, 40);
  });

  it('redacts credentials in logged headers', () => {
    const out = capture();
    const root = createRootLogger({ level: 'debug', destination: out.destination });
    root.debug({ headers: { authorization: 'Bearer s3cret', 'x-api-key': 'k3y', accept: '*/*' } }, 'h');
    assert.deepEqual(out.json()[0].headers, { authorization: '[redacted]', 'x-api-key': '[redacted]', accept: '*/*' });
  });

  it('silent drops everything; Nest’s logger goes through it with its context', () => {
    const silent = capture();
    createRootLogger({ level: 'silent', destination: silent.destination }).error('nothing');
    assert.equal(silent.lines.length, 0);
    const out = capture();
    createNestLogger(createRootLogger({ level: 'info', destination: out.destination })).log?.('hello', 'Ctx');
    assert.deepEqual((({ msg, context }) => ({ msg, context }))(out.json()[0]), { msg: 'hello', context: 'Ctx' });
  });
});

describe('requestLogFields', () => {
  it('describes the request, its route and generation; 499 when the client left first', () => {
    const req = new IncomingMessage(new Socket());
    req.method = 'POST';
    req.url = '/api/chat?key=secret';
    req.headers = { authorization: 'Bearer x' };
    const res = new ServerResponse(req);
    const fields = requestLogFields(req, res, 12, false);
    assert.deepEqual(fields, {
      reqId: undefined,
      method: 'POST',
      url: '/api/chat',
      route: undefined,
      status: 499,
      durationMs: 12,
      aborted: true,
    });
    const withHeaders = requestLogFields(req, res, 12, true);
    assert.deepEqual(withHeaders.headers, { authorization: 'Bearer x' }, 'redacted by the logger, not here');
  });
});

// Issue 33 item 5: the request's log line carries its caller (principal id and name, never a key), the tokens its
// generations used and the limit that refused it — a real Fastify server with the observation hook and the logger.
describe('the request log line', () => {
  it('carries the principal, its name, the tokens (prompt, cached, completion) and the refusal', async () => {
    const out = capture();
    const app = Fastify();
    installHttpObservation(app, {
      logger: createHttpLogger(createRootLogger({ level: 'info', destination: out.destination })),
    });
    app.post('/api/chat', () => {
      const context = currentRequestContext();
      assert.ok(context);
      context.principal = 'key:0123456789ab';
      context.principalName = 'team-a';
      context.addGeneration({ model: 'demo:latest', promptTokens: 30, cachedTokens: 12, completionTokens: 7 });
      return Promise.resolve({ ok: true });
    });
    app.get('/api/tags', (_request, reply) => {
      const context = currentRequestContext();
      assert.ok(context);
      context.principal = 'tenant:acme';
      context.principalName = 'tenant:acme';
      context.refusal = 'requests_per_minute';
      return reply.code(429).send({ error: 'slow down' });
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-secret' };
      assert.equal((await fetch(`${base}/api/chat`, { method: 'POST', headers, body: '{}' })).status, 200);
      assert.equal((await fetch(`${base}/api/tags`)).status, 429);
      // The line is written when the response ends (a bound for a hang, not a timing assertion).
      for (let i = 0; i < 500 && out.lines.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
      const [chat, tags] = out.json();
      assert.deepEqual(
        (({ principal, principalName, model, promptTokens, cachedTokens, completionTokens }) => ({
          principal,
          principalName,
          model,
          promptTokens,
          cachedTokens,
          completionTokens,
        }))(chat),
        {
          principal: 'key:0123456789ab',
          principalName: 'team-a',
          model: 'demo:latest',
          promptTokens: 30,
          cachedTokens: 12,
          completionTokens: 7,
        },
      );
      assert.equal(chat.refusal, undefined);
      assert.equal(tags.principal, 'tenant:acme');
      assert.equal(tags.principalName, undefined, 'the name only when it differs from the id');
      assert.equal(tags.refusal, 'requests_per_minute');
      assert.equal(tags.status, 429);
      assert.doesNotMatch(out.lines.join('\n'), /sk-secret/);
    } finally {
      await app.close();
    }
  });
});
