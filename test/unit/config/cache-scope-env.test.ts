import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidConfigError } from '../../../src/common/errors';
import { cacheScopeMode, DaemonConfig, loadConfig, parseCacheScopeEnv } from '../../../src/config';

describe('LLAMAD_CACHE_SCOPE', () => {
  it('reads principal or global, case-insensitively, trimmed and unquoted', () => {
    assert.equal(loadConfig({ LLAMAD_CACHE_SCOPE: 'principal' }).cacheScope, 'principal');
    assert.equal(loadConfig({ LLAMAD_CACHE_SCOPE: ' "GLOBAL" ' }).cacheScope, 'global');
    assert.equal(parseCacheScopeEnv('Principal'), 'principal');
    assert.equal(parseCacheScopeEnv(''), undefined);
    assert.equal(loadConfig({}).cacheScope, undefined);
  });

  it('refuses any other value with a start-up error that names the setting and the allowed values', () => {
    for (const bad of ['tenant', 'none', '1', 'principals', 'global,principal']) {
      assert.throws(
        () => loadConfig({ LLAMAD_CACHE_SCOPE: bad }),
        (err: unknown) => {
          assert.ok(err instanceof InvalidConfigError);
          assert.equal(err.message, `LLAMAD_CACHE_SCOPE must be "principal" or "global", not "${bad}"`);
          return true;
        },
      );
    }
  });

  it('unset: principal when API keys are configured (list or file), global without keys', () => {
    assert.equal(cacheScopeMode(loadConfig({})), 'global');
    assert.equal(cacheScopeMode(loadConfig({ LLAMAD_API_KEYS: 'k1,k2' })), 'principal');
    assert.equal(cacheScopeMode(loadConfig({ LLAMAD_API_KEYS_FILE: '/etc/llamad/keys' })), 'principal');
    // An empty list is no keys.
    assert.equal(cacheScopeMode(loadConfig({ LLAMAD_API_KEYS: ' , ' })), 'global');
  });

  it('set: wins over the default either way', () => {
    assert.equal(cacheScopeMode(loadConfig({ LLAMAD_API_KEYS: 'k', LLAMAD_CACHE_SCOPE: 'global' })), 'global');
    assert.equal(cacheScopeMode(loadConfig({ LLAMAD_CACHE_SCOPE: 'principal' })), 'principal');
  });

  it('a DaemonConfig built by hand (library hosts) follows the same default', () => {
    const config = new DaemonConfig();
    assert.equal(cacheScopeMode(config), 'global');
    config.apiKeys = ['k'];
    assert.equal(cacheScopeMode(config), 'principal');
  });
});
