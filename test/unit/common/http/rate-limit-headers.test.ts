import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QuotaExceededError, RateLimitedError, RequestTooLargeError } from '../../../../src/common/errors';
import { goDuration, rateLimitHeaders, refusalHeaders, rfc3339After } from '../../../../src/common/http';

// shared-service.md §1 (OpenAI's Go durations), §2 (Anthropic's RFC 3339 resets).
describe('rate-limit header formatting', () => {
  it('writes Go durations as OpenAI does (1s, 6m0s, 12ms)', () => {
    assert.equal(goDuration(1000), '1s');
    assert.equal(goDuration(360_000), '6m0s');
    assert.equal(goDuration(12), '12ms');
    assert.equal(goDuration(0), '0s');
    assert.equal(goDuration(-5), '0s');
    assert.equal(goDuration(Number.NaN), '0s');
    assert.equal(goDuration(1500), '1.5s');
    assert.equal(goDuration(59_950), '59.95s');
    assert.equal(goDuration(61_001), '1m1.001s');
    assert.equal(goDuration(3_600_000), '1h0m0s');
    assert.equal(goDuration(86_399_000), '23h59m59s');
    assert.equal(goDuration(0.4), '1ms');
  });

  it('writes Anthropic resets as RFC 3339 UTC times rounded up to the second', () => {
    const now = Date.UTC(2025, 7, 21, 12, 40, 0, 250);
    assert.equal(rfc3339After(58_000, now), '2025-08-21T12:40:59Z');
    assert.equal(rfc3339After(0, Date.UTC(2025, 7, 21, 12, 40, 0, 0)), '2025-08-21T12:40:00Z');
  });

  it('OpenAI and native routes get x-ratelimit-*, Anthropic routes anthropic-ratelimit-*', () => {
    const state = {
      requests: { limit: 60, remaining: 59, resetMs: 1000 },
      tokens: { limit: 150000, remaining: 149984, resetMs: 360_000 },
    };
    const expected = {
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '59',
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-limit-tokens': '150000',
      'x-ratelimit-remaining-tokens': '149984',
      'x-ratelimit-reset-tokens': '6m0s',
    };
    assert.deepEqual(rateLimitHeaders('openai', state), expected);
    assert.deepEqual(rateLimitHeaders('ollama', state), expected);
    const now = Date.UTC(2025, 7, 21, 12, 40, 0, 0);
    assert.deepEqual(rateLimitHeaders('anthropic', state, now), {
      'anthropic-ratelimit-requests-limit': '60',
      'anthropic-ratelimit-requests-remaining': '59',
      'anthropic-ratelimit-requests-reset': '2025-08-21T12:40:01Z',
      'anthropic-ratelimit-tokens-limit': '150000',
      'anthropic-ratelimit-tokens-remaining': '149984',
      'anthropic-ratelimit-tokens-reset': '2025-08-21T12:46:00Z',
    });
    assert.deepEqual(rateLimitHeaders('openai', { tokens: { limit: 10, remaining: -3, resetMs: 5 } }), {
      'x-ratelimit-limit-tokens': '10',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '5ms',
    });
    assert.deepEqual(rateLimitHeaders('anthropic', {}), {});
  });

  it('a 429 adds retry-after (whole seconds, at least 1) and retry-after-ms; quotas and too-large add x-should-retry', () => {
    const limited = new RateLimitedError('slow down', 1234, { requests: { limit: 2, remaining: 0, resetMs: 1184 } });
    assert.deepEqual(refusalHeaders(limited, 'openai'), {
      'x-ratelimit-limit-requests': '2',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '1.184s',
      'retry-after': '2',
      'retry-after-ms': '1234',
    });
    const soon = refusalHeaders(new RateLimitedError('x', 10), 'ollama');
    assert.equal(soon['retry-after'], '1');
    assert.equal(soon['retry-after-ms'], '10');
    assert.equal(soon['x-should-retry'], undefined);
    assert.equal(refusalHeaders(new QuotaExceededError('q', 3_600_000), 'openai')['x-should-retry'], 'false');
    assert.equal(refusalHeaders(new QuotaExceededError('q', 3_600_000), 'openai')['retry-after'], '3600');
    assert.equal(refusalHeaders(new RequestTooLargeError('big', 500), 'anthropic')['x-should-retry'], 'false');
  });
});
