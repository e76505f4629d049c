import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HostPolicy, OriginPolicy, RequestGate } from '../../../src/security';

describe('RequestGate.judge', () => {
  const gate = new RequestGate(new OriginPolicy([]), new HostPolicy(() => '127.0.0.1'));

  it('forbids a foreign origin before looking at anything else, whatever the method', () => {
    for (const method of ['GET', 'POST', 'DELETE', 'OPTIONS', 'PUT']) {
      assert.deepEqual(gate.judge({ method, headers: { origin: 'https://evil.example', host: 'localhost' } }), {
        action: 'forbid',
        reason: 'origin',
      });
    }
  });

  it('forbids a foreign host on a loopback bind', () => {
    assert.deepEqual(gate.judge({ method: 'GET', headers: { host: 'evil.example' } }), {
      action: 'forbid',
      reason: 'host',
    });
  });

  it('passes requests without an Origin without CORS headers', () => {
    assert.deepEqual(gate.judge({ method: 'POST', headers: { host: '127.0.0.1:11434' } }), {
      action: 'pass',
      headers: {},
    });
  });

  it('passes an allowed origin with its CORS headers; * answers *', () => {
    const verdict = gate.judge({ method: 'GET', headers: { origin: 'http://localhost:3000', host: 'localhost' } });
    assert.deepEqual(verdict, {
      action: 'pass',
      headers: { 'access-control-allow-origin': 'http://localhost:3000', vary: 'Origin' },
    });
    const open = new RequestGate(new OriginPolicy(['*']), new HostPolicy(() => '127.0.0.1'));
    const any = open.judge({ method: 'GET', headers: { origin: 'https://x.example', host: 'localhost' } });
    assert.equal(any.action === 'pass' && any.headers['access-control-allow-origin'], '*');
  });

  it('answers OPTIONS as a preflight, listing allowed request headers only', () => {
    const verdict = gate.judge({
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:3000',
        host: 'localhost',
        'access-control-request-headers': 'X-Stainless-Foo, anthropic-new, cookie',
      },
    });
    assert.equal(verdict.action, 'preflight');
    const headers = verdict.action === 'preflight' ? verdict.headers : {};
    const allowed = headers['access-control-allow-headers'].split(', ');
    assert.ok(allowed.includes('x-stainless-foo') && allowed.includes('anthropic-new'));
    assert.ok(!allowed.includes('cookie'));
    assert.equal(headers['access-control-max-age'], '43200');
    assert.deepEqual(gate.judge({ method: 'OPTIONS', headers: { host: 'localhost' } }), {
      action: 'preflight',
      headers: {},
    });
  });
});
