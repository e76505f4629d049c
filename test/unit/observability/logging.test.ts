import assert from 'node:assert/strict';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { describe, it } from 'node:test';
import {
  createNestLogger,
  createRootLogger,
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
