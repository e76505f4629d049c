import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { describe, it } from 'node:test';
import { HostPolicy, hostOfHeader, isLoopbackAddress } from '../../../src/security';

// reference/ollama-api.md §1.3.
describe('host policy', () => {
  it('hostOfHeader strips ports and brackets and lower-cases', () => {
    assert.equal(hostOfHeader('LocalHost:11434'), 'localhost');
    assert.equal(hostOfHeader('[::1]:11434'), '::1');
    assert.equal(hostOfHeader('[::1]'), '::1');
    assert.equal(hostOfHeader('::1'), '::1');
    assert.equal(hostOfHeader('10.0.0.1'), '10.0.0.1');
    assert.equal(hostOfHeader(''), '');
  });

  it('isLoopbackAddress knows v4, v6 and v4-mapped loopback', () => {
    for (const ip of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '[::1]']) {
      assert.ok(isLoopbackAddress(ip), ip);
    }
    for (const ip of ['0.0.0.0', '::', '10.0.0.1', 'localhost', undefined]) {
      assert.ok(!isLoopbackAddress(ip), String(ip));
    }
  });

  it('on a loopback bind: local names, private/loopback/unspecified IPs pass; other names and public IPs do not', () => {
    const policy = new HostPolicy(() => '127.0.0.1');
    assert.ok(policy.enforced);
    for (const host of [
      undefined,
      '',
      'localhost',
      'localhost:11434',
      hostname(),
      'x.localhost',
      'printer.local',
      'db.internal',
      '127.0.0.1:11434',
      '[::1]:11434',
      '10.1.1.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.0.10',
      '[fd00::1]:80',
      '0.0.0.0',
    ]) {
      assert.ok(policy.allows(host), String(host));
    }
    for (const host of ['evil.example', 'localhost.evil.example', '8.8.8.8', '172.32.0.1', 'internal', 'local']) {
      assert.ok(!policy.allows(host), host);
    }
  });

  it('is off on a non-loopback bind or when the address is unknown', () => {
    assert.ok(new HostPolicy(() => '0.0.0.0').allows('evil.example'));
    assert.ok(new HostPolicy(() => '::').allows('evil.example'));
    assert.ok(new HostPolicy(() => undefined).allows('evil.example'));
    assert.ok(!new HostPolicy(() => '::1').allows('evil.example'));
  });
});
