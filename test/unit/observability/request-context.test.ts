import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  currentRequestContext,
  MAX_REQUEST_ID_LENGTH,
  RequestContext,
  requestContextStorage,
  requestIdFrom,
} from '../../../src/observability';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('requestIdFrom (x-request-id)', () => {
  it('keeps a sane client id, the first of repeated headers', () => {
    assert.equal(requestIdFrom('abc-123'), 'abc-123');
    assert.equal(requestIdFrom(['first', 'second']), 'first');
    assert.equal(requestIdFrom('x'.repeat(MAX_REQUEST_ID_LENGTH)), 'x'.repeat(MAX_REQUEST_ID_LENGTH));
  });

  it('generates a UUID when there is none, or it is too long, empty or has spaces or control characters', () => {
    for (const bad of [undefined, '', 'x'.repeat(MAX_REQUEST_ID_LENGTH + 1), 'a b', 'a\nb', 'é']) {
      assert.match(requestIdFrom(bad), UUID, String(bad));
    }
    assert.notEqual(requestIdFrom(undefined), requestIdFrom(undefined));
  });
});

describe('RequestContext', () => {
  it('sums the generations of a request; the model and outcome are the last one’s, the TTFT the first one’s', () => {
    const c = new RequestContext('id', 'POST', '/v1/chat/completions');
    assert.equal(c.generation, undefined);
    c.addGeneration({ model: 'a', promptTokens: 10, cachedTokens: 4, completionTokens: 3, timeToFirstTokenMs: 12 });
    c.addGeneration({
      model: 'b',
      promptTokens: 5,
      cachedTokens: 0,
      completionTokens: 2,
      timeToFirstTokenMs: 30,
      doneReason: 'length',
    });
    assert.deepEqual(c.generation, {
      model: 'b',
      generations: 2,
      promptTokens: 15,
      cachedTokens: 4,
      completionTokens: 5,
      timeToFirstTokenMs: 12,
      doneReason: 'length',
      error: undefined,
    });
  });

  it('is current inside requestContextStorage.run, across awaits, and not outside', async () => {
    const c = new RequestContext('id', 'GET', '/health');
    assert.equal(currentRequestContext(), undefined);
    await requestContextStorage.run(c, async () => {
      await new Promise((r) => setTimeout(r, 1));
      assert.equal(currentRequestContext(), c);
    });
    assert.equal(currentRequestContext(), undefined);
  });
});
