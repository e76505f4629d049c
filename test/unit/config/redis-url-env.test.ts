import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidConfigError } from '../../../src/common/errors';
import { loadConfig } from '../../../src/config';
import { parseRedisUrlEnv } from '../../../src/config/redis-url-env';

describe('LLAMAD_REDIS_URL', () => {
  it('accepts redis:// and rediss:// URLs and keeps them as given; unset is in memory', () => {
    assert.equal(parseRedisUrlEnv(''), '');
    for (const url of ['redis://127.0.0.1:6379', 'rediss://cache.internal:6380/2', 'redis://:secret@host/0']) {
      assert.equal(parseRedisUrlEnv(url), url);
    }
    const config = loadConfig({ LLAMAD_REDIS_URL: ' redis://127.0.0.1:6379/1 ' }, () => 2 ** 30);
    assert.equal(config.redisUrl, 'redis://127.0.0.1:6379/1');
    assert.equal(loadConfig({}, () => 2 ** 30).redisUrl, '');
  });

  it('refuses anything else at start-up, without repeating a password', () => {
    for (const bad of ['localhost:6379', 'http://host:6379', 'redis://', 'redis://host/x', 'valkey://host']) {
      assert.throws(() => parseRedisUrlEnv(bad), InvalidConfigError, bad);
    }
    assert.throws(
      () => loadConfig({ LLAMAD_REDIS_URL: 'http://user:hunter2@host' }, () => 2 ** 30),
      (err: Error) => err instanceof InvalidConfigError && !err.message.includes('hunter2'),
    );
  });
});
