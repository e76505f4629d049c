import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QuotaExceededError, RateLimitedError, RequestTooLargeError } from '../../../../src/common/errors';
import { RequestContext } from '../../../../src/observability/request-context';
import {
  FlexibleRateLimitStore,
  LimitWindowName,
  RateLimitStore,
  TenantLimiter,
  WindowCount,
} from '../../../../src/security/limits';

/** Lets background refunds (TenantLimiter.refundAll) reach the store. */
const settle = () => new Promise((r) => setImmediate(r));

describe('TenantLimiter over the in-memory store', () => {
  it('requests_per_minute: admits up to the limit, then 429 with the reset; a refused request is not counted', async () => {
    const store = new FlexibleRateLimitStore();
    const limiter = new TenantLimiter(store);
    const limits = { requests_per_minute: 2 };
    const first = await limiter.admit('p1', limits);
    assert.equal(first.state.requests?.limit, 2);
    assert.equal(first.state.requests?.remaining, 1);
    assert.ok(first.state.requests!.resetMs > 59_000 && first.state.requests!.resetMs <= 60_000);
    await limiter.admit('p1', limits);
    const context = new RequestContext('r', 'POST', '/api/chat');
    const err = await limiter.admit('p1', limits, context).then(
      () => assert.fail('admitted'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof RateLimitedError && !(err instanceof QuotaExceededError));
    assert.equal(context.refusal, 'requests_per_minute');
    assert.ok(err.retryAfterMs > 59_000 && err.retryAfterMs <= 60_100);
    assert.deepEqual({ ...err.state.requests, resetMs: 0 }, { limit: 2, remaining: 0, resetMs: 0 });
    assert.match(err.message, /requests_per_minute is 2/);
    await settle();
    assert.equal((await store.get('requests_per_minute', 'p1'))?.consumed, 2);
    // Another principal has its own window.
    assert.equal((await limiter.admit('p2', limits)).state.requests?.remaining, 1);
  });

  it('concurrent_requests: a slot comes back when the request ends (release is idempotent)', async () => {
    const limiter = new TenantLimiter(new FlexibleRateLimitStore());
    const limits = { concurrent_requests: 1, requests_per_minute: 10 };
    const a = await limiter.admit('p', limits);
    assert.equal(a.state.requests?.remaining, 9);
    const context = new RequestContext('r', 'POST', '/v1/messages');
    const err = await limiter.admit('p', limits, context).catch((e: unknown) => e);
    assert.ok(err instanceof RateLimitedError);
    assert.equal(err.retryAfterMs, 1000);
    assert.equal(err.state.requests?.remaining, 9, 'the refused request is not counted in the minute');
    assert.equal(context.refusal, 'concurrent_requests');
    a.release();
    a.release();
    await settle();
    const b = await limiter.admit('p', limits);
    await assert.rejects(limiter.admit('p', limits), RateLimitedError);
    b.release();
  });

  it('tokens: a reservation is settled with the real usage; the day quota is insufficient_quota', async () => {
    const store = new FlexibleRateLimitStore();
    const limiter = new TenantLimiter(store);
    const limits = { tokens_per_minute: 100, tokens_per_day: 150 };
    const r = await limiter.reserve('p', limits, 80);
    assert.equal(r?.state.tokens?.remaining, 20); // per minute: 20 left, per day 70: the tighter is reported
    await assert.rejects(limiter.reserve('p', limits, 30), (e: unknown) => {
      return e instanceof RateLimitedError && !(e instanceof QuotaExceededError) && /tokens_per_minute/.test(e.message);
    });
    r!.settle(30); // 50 unused tokens come back
    await settle();
    assert.equal((await store.get('tokens_per_minute', 'p'))?.consumed, 30);
    assert.equal((await store.get('tokens_per_day', 'p'))?.consumed, 30);
    const r2 = await limiter.reserve('p', limits, 60);
    r2!.settle(90); // ran past its estimate: the extra 30 are charged, without refusal
    await settle();
    assert.equal((await store.get('tokens_per_minute', 'p'))?.consumed, 120);
    const context = new RequestContext('r', 'POST', '/v1/chat/completions');
    const quota = await limiter.reserve('p', { tokens_per_day: 150 }, 40, context).catch((e: unknown) => e);
    assert.ok(quota instanceof QuotaExceededError, String(quota));
    assert.equal(context.refusal, 'tokens_per_day');
    assert.equal(quota.state.tokens?.remaining, 30);
    assert.ok(quota.retryAfterMs > 86_000_000);
    await settle();
    assert.equal((await store.get('tokens_per_day', 'p'))?.consumed, 120, 'a refused reservation is given back');
  });

  it('a reservation larger than the whole limit is refused as too large, without counting', async () => {
    const store = new FlexibleRateLimitStore();
    const limiter = new TenantLimiter(store);
    const context = new RequestContext('r', 'POST', '/api/generate');
    const known = { requests: { limit: 5, remaining: 4, resetMs: 1000 } };
    const err = await limiter.reserve('p', { tokens_per_minute: 100 }, 101, context, known).catch((e: unknown) => e);
    assert.ok(err instanceof RequestTooLargeError, String(err));
    assert.match(err.message, /request too large/);
    assert.equal(context.refusal, 'tokens_per_minute');
    assert.deepEqual(err.state.requests, known.requests);
    assert.equal(err.state.tokens?.limit, 100);
    assert.equal(await store.get('tokens_per_minute', 'p'), undefined);
    assert.equal(await limiter.reserve('p', {}, 1_000_000), undefined, 'no token limits: nothing reserved');
  });

  it('a store that fails lets requests through (fail open) and logs once', async () => {
    let calls = 0;
    const broken: RateLimitStore = {
      consume: () => {
        calls++;
        return Promise.reject(new Error('connection refused'));
      },
      refund: () => Promise.resolve(),
      get: (): Promise<WindowCount | undefined> => Promise.reject(new Error('connection refused')),
    };
    const limiter = new TenantLimiter(broken);
    const admission = await limiter.admit('p', { requests_per_minute: 1, concurrent_requests: 1 });
    assert.deepEqual(admission.state, {});
    await limiter.admit('p', { requests_per_minute: 1, concurrent_requests: 1 });
    const r = await limiter.reserve('p', { tokens_per_minute: 10 }, 5);
    assert.deepEqual(r?.state, {});
    assert.equal(calls, 5);
  });

  it('refunds skip a window that ended (its count is gone already)', async () => {
    const counts = new Map<string, number>();
    const refunds: [LimitWindowName, number][] = [];
    const store: RateLimitStore = {
      consume: (window, key, points) => {
        counts.set(key, (counts.get(key) ?? 0) + points);
        return Promise.resolve({ consumed: counts.get(key)!, resetMs: 0 }); // the window ends at once
      },
      refund: (window, _key, points) => {
        refunds.push([window, points]);
        return Promise.resolve();
      },
      get: () => Promise.resolve(undefined),
    };
    const limiter = new TenantLimiter(store);
    const a = await limiter.admit('p', { concurrent_requests: 5 });
    await new Promise((r) => setTimeout(r, 5));
    a.release();
    await settle();
    assert.deepEqual(refunds, []);
  });

  it('counts(): only the four counted limits make a principal metered', () => {
    assert.equal(TenantLimiter.counts(undefined), false);
    assert.equal(TenantLimiter.counts({ max_output_tokens: 10, weight: 2 }), false);
    assert.equal(TenantLimiter.counts({ tokens_per_day: 1 }), true);
  });
});
