import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

// Issue 12 §6: Anthropic's stop_reason is "stop_sequence" (with the string) only for one of the request's
// stop_sequences; a stop of the template (renderChat's additional stops) or of the Modelfile is "end_turn". The
// FakeBinding reports which stop string ended each task.
describe('Anthropic stop_reason by the source of the stop (FakeBinding)', () => {
  let t: TestApp;
  let client: Anthropic;
  const binding = new FakeBinding();

  before(async () => {
    binding.chat = { ...binding.chat, additionalStops: ['<|im_end|>'] };
    t = await createTestApp({ binding });
    client = new Anthropic({ baseURL: t.baseUrl, apiKey: 'x', maxRetries: 0 });
    const path = join(t.modelsDir, 'stops.gguf');
    await writeTinyGguf(path, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'stops',
      modelfile: `FROM ${path}\nPARAMETER stop STOP`,
      stream: false,
    });
    assert.equal(res.status, 200, await res.text());
  });

  after(() => t?.close());

  const base = { model: 'stops', max_tokens: 32, messages: [{ role: 'user' as const, content: 'Hi' }] };

  /** The message, non-streamed and streamed, when the engine ends on `stopString`. */
  async function both(stopString: string | undefined, stopSequences?: string[]) {
    binding.script = () => ({ pieces: ['Hello', ' there'], reason: stopString ? 'stop' : 'eog', stopString });
    const params = { ...base, ...(stopSequences ? { stop_sequences: stopSequences } : {}) };
    const whole = await client.messages.create(params);
    const streamed = await client.messages.stream(params).finalMessage();
    const submitted = binding.submitted.at(-1);
    return { whole, streamed, stops: submitted?.stop ?? [] };
  }

  it('a template stop is end_turn', async () => {
    const { whole, streamed, stops } = await both('<|im_end|>', ['END']);
    assert.ok(stops.includes('<|im_end|>'), 'the template stop reached the engine');
    for (const m of [whole, streamed]) {
      assert.equal(m.stop_reason, 'end_turn');
      assert.equal(m.stop_sequence, null);
    }
  });

  it('a Modelfile stop is end_turn', async () => {
    const { whole, streamed, stops } = await both('STOP');
    assert.ok(stops.includes('STOP'), 'the Modelfile stop reached the engine');
    for (const m of [whole, streamed]) {
      assert.equal(m.stop_reason, 'end_turn');
      assert.equal(m.stop_sequence, null);
    }
  });

  it('end of generation (no stop string) is end_turn', async () => {
    const { whole, streamed } = await both(undefined, ['END']);
    for (const m of [whole, streamed]) assert.equal(m.stop_reason, 'end_turn');
  });

  it('a request stop_sequence is stop_sequence with the string', async () => {
    const { whole, streamed } = await both('END', ['X', 'END']);
    for (const m of [whole, streamed]) {
      assert.equal(m.stop_reason, 'stop_sequence');
      assert.equal(m.stop_sequence, 'END');
    }
  });
});
