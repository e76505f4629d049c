import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { cacheScopeKey } from '../../../src/security/cache-scope';

describe('cacheScopeKey', () => {
  it('global: no scope (the shared one)', () => {
    assert.equal(cacheScopeKey('global', 'key:0123456789ab'), undefined);
    assert.equal(cacheScopeKey('global', undefined), undefined);
  });

  it('principal: 16 hex characters of the sha256 of the principal id, never the id itself', () => {
    const id = 'key:0123456789ab';
    const key = cacheScopeKey('principal', id);
    assert.equal(key, createHash('sha256').update(id).digest('hex').slice(0, 16));
    assert.match(key ?? '', /^[0-9a-f]{16}$/);
    assert.ok(!(key ?? '').includes('0123456789ab'));
  });

  it('principal: one key per principal; no principal is the anonymous one', () => {
    const a = cacheScopeKey('principal', 'key:aaaaaaaaaaaa');
    const b = cacheScopeKey('principal', 'key:bbbbbbbbbbbb');
    assert.notEqual(a, b);
    assert.equal(cacheScopeKey('principal', 'key:aaaaaaaaaaaa'), a);
    assert.equal(cacheScopeKey('principal', undefined), cacheScopeKey('principal', 'anonymous'));
    assert.notEqual(cacheScopeKey('principal', undefined), a);
  });
});
