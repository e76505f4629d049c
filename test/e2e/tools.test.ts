import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson, readNdjson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: {
      type: 'object',
      required: ['city'],
      properties: { city: { type: 'string', description: 'City name' } },
    },
  },
};

const TOOL_CALL = ['<tool_call>{"name":"get_weather",', '"arguments":{"city":"Tokyo"}}', '</tool_call>'];

// Tool calling through the official `ollama` client over a scripted FakeBinding (native mode: the fake Jinja
// template's renderChat + parser): tool_calls out, a role:tool message back in (§3.3, §8.5).
describe('tools round trip (FakeBinding, ollama client)', () => {
  let t: TestApp;
  let ollama: Ollama;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding });
    ollama = new Ollama({ host: t.baseUrl });
    for (const [model, template] of [
      ['tooly', '{% for tool in tools %}{{ tool }}{% endfor %}{{ chatml }}'],
      ['plain', '{{ chatml }}'],
      ['thinker', '{{ chatml }}<think></think>'],
    ]) {
      const path = join(t.modelsDir, `${model}.gguf`);
      await writeTinyGguf(path, { chatTemplate: template });
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile: `FROM ${path}`, stream: false });
      assert.equal(res.status, 200);
    }
  });

  beforeEach(() => {
    binding.chat.thinking = false;
    binding.renderRequests.length = 0;
  });

  after(() => t.close());

  it('returns tool_calls, then renders the tool result sent back', async () => {
    binding.script = () => ({ pieces: TOOL_CALL });
    const first = await ollama.chat({
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather in Tokyo?' }],
      tools: [weather],
    });
    assert.equal(first.message.content, '');
    assert.equal(first.message.tool_calls?.length, 1);
    const call = first.message.tool_calls![0];
    assert.deepEqual(call.function, { index: 0, name: 'get_weather', arguments: { city: 'Tokyo' } });

    binding.script = () => ({ pieces: ['It is ', 'sunny.'] });
    const second = await ollama.chat({
      model: 'tooly',
      messages: [
        { role: 'user', content: 'Weather in Tokyo?' },
        first.message,
        { role: 'tool', content: '{"temp":21}', tool_name: 'get_weather' },
      ],
      tools: [weather],
    });
    assert.equal(second.message.content, 'It is sunny.');
    assert.equal(second.message.tool_calls, undefined);
    const rendered = binding.renderRequests.at(-1)!;
    assert.equal(rendered.messages[1].toolCalls?.[0].name, 'get_weather');
    assert.deepEqual(JSON.parse(rendered.messages[1].toolCalls![0].arguments), { city: 'Tokyo' });
    assert.equal(rendered.messages[2].role, 'tool');
    assert.equal(rendered.messages[2].toolName, 'get_weather');
    assert.equal(rendered.messages[2].content, '{"temp":21}');
  });

  it('streams: the tool call arrives on the final chunk (native mode)', async () => {
    binding.script = () => ({ pieces: TOOL_CALL });
    const res = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'tooly',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [weather],
    });
    const lines = await readNdjson(res);
    const last = lines.at(-1)!;
    assert.equal(last.done, true);
    const message = last.message as { tool_calls?: { function: { index: number; name: string } }[] };
    assert.equal(message.tool_calls?.[0].function.name, 'get_weather');
    assert.equal(message.tool_calls?.[0].function.index, 0);
    for (const line of lines.slice(0, -1)) {
      assert.equal((line.message as { content: string }).content, '', 'no tool-call text as content');
    }
  });

  it('400 for tools on a model without the capability', async () => {
    const res = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'plain',
      messages: [{ role: 'user', content: 'x' }],
      tools: [weather],
    });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { error: 'registry.ollama.ai/library/plain:latest does not support tools' });
  });

  it('thinking and logprobs reach the client', async () => {
    binding.chat.thinking = true;
    binding.script = () => ({ pieces: ['hmm', '</think>', 'Yes'] });
    const res = await ollama.chat({
      model: 'thinker',
      messages: [{ role: 'user', content: 'Sure?' }],
      logprobs: true,
      top_logprobs: 2,
    });
    assert.equal(res.message.thinking, 'hmm');
    assert.equal(res.message.content, 'Yes');
    const logprobs = (res as unknown as { logprobs: { token: string; top_logprobs: unknown[] }[] }).logprobs;
    assert.deepEqual(
      logprobs.map((l) => l.token),
      ['hmm', '</think>', 'Yes'],
    );
    assert.equal(logprobs[0].top_logprobs.length, 2);
    const bad = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'thinker',
      messages: [{ role: 'user', content: 'x' }],
      top_logprobs: 21,
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: 'top_logprobs must be between 0 and 20' });
  });
});
