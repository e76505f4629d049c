import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { createModel } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

// POST /v1/responses against the REAL addon with tiny-qwen2 (random weights: only shapes are checked), through the
// official `openai` client (reference/ollama-api.md §12.6).
describe('OpenAI /v1/responses with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;
  let client: OpenAI;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    client = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0 });
    await createModel(t.baseUrl, 'tiny', `FROM ${TINY_QWEN2}`);
  });

  after(() => t?.close());

  it('create, stream and a continuation whose prompt reuses the cached conversation', async () => {
    const first = await client.responses.create({ model: 'tiny', input: 'Hello', max_output_tokens: 8 });
    assert.ok(['completed', 'incomplete'].includes(first.status ?? ''), first.status);
    assert.equal(first.output.at(-1)?.type, 'message');
    assert.ok(first.usage!.output_tokens > 0 && first.usage!.output_tokens <= 8);
    assert.ok(first.usage!.input_tokens > 0);
    assert.equal(first.usage!.total_tokens, first.usage!.input_tokens + first.usage!.output_tokens);

    const stream = client.responses.stream({
      model: 'tiny',
      input: 'And then?',
      previous_response_id: first.id,
      max_output_tokens: 8,
    });
    let deltas = '';
    stream.on('response.output_text.delta', (e) => (deltas += e.delta));
    const second = await stream.finalResponse();
    assert.equal(second.output_text, deltas);
    assert.equal(second.previous_response_id, first.id);
    assert.ok(second.usage!.input_tokens > first.usage!.input_tokens, 'the first turn is part of the prompt');
    assert.ok(second.usage!.input_tokens_details.cached_tokens > 0, 'the shared prefix came from the KV cache');
    const got = await client.responses.retrieve(second.id);
    assert.equal(got.output_text, second.output_text);
  });

  it('the same request twice reports the same prompt size, the second with a cached part', async () => {
    const body = {
      model: 'tiny',
      input: 'Count the prompt the same way twice, please.',
      max_output_tokens: 4,
      store: false,
    };
    const a = await client.responses.create(body);
    const b = await client.responses.create(body);
    assert.equal(b.usage!.input_tokens, a.usage!.input_tokens);
    assert.ok(b.usage!.input_tokens_details.cached_tokens > 0, 'the second prompt came from the KV cache');
    assert.ok(b.usage!.input_tokens_details.cached_tokens < b.usage!.input_tokens);
  });
});
