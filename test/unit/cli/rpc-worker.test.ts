import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CliError } from '../../../src/cli/errors';
import { isLoopbackHost, rpcWorkerArgs } from '../../../src/cli/rpc-worker';

describe('llamad rpc-worker', () => {
  it('passes host, port and threads to rpc-server', () => {
    assert.deepEqual(rpcWorkerArgs({ host: '127.0.0.1', port: '50052' }), ['--host', '127.0.0.1', '--port', '50052']);
    assert.deepEqual(rpcWorkerArgs({ host: '10.0.0.2', port: '6000', threads: '4' }), [
      '--host',
      '10.0.0.2',
      '--port',
      '6000',
      '--threads',
      '4',
    ]);
  });

  it('rejects a bad port, thread count or an IPv6 host', () => {
    for (const o of [
      { host: '127.0.0.1', port: '0' },
      { host: '127.0.0.1', port: '70000' },
      { host: '127.0.0.1', port: 'x' },
      { host: '127.0.0.1', port: '1', threads: '0' },
      { host: '::1', port: '1' },
    ]) {
      assert.throws(() => rpcWorkerArgs(o), CliError, JSON.stringify(o));
    }
  });

  it('knows loopback binds (anything else gets the exposure warning)', () => {
    assert.ok(isLoopbackHost('127.0.0.1'));
    assert.ok(isLoopbackHost('localhost'));
    assert.ok(!isLoopbackHost('0.0.0.0'));
    assert.ok(!isLoopbackHost('10.0.0.2'));
  });
});
