import Anthropic from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI, { BadRequestError } from 'openai';
import { ensureTestModels, QWEN_TOOLS_GO_TEMPLATE, TINY_QWEN2, TINY_QWEN2_TOOLS } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** "Hello world" in the qwen2 vocabulary of tiny-qwen2 (ggml-vocab-qwen2.gguf). */
const HELLO_WORLD_IDS = [9707, 1879];

/** A /v1/messages body with two system blocks (cache_control ignored), two tools and a tool round trip. */
function toolsBody(model: string): Anthropic.MessageCreateParamsNonStreaming {
  return {
    model,
    max_tokens: 4,
    system: [
      { type: 'text', text: 'You are a weather bot.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: ' Answer in one word.' },
    ],
    tools: [
      {
        name: 'get_weather',
        description: 'Weather of a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
      { name: 'get_time', description: 'Local time', input_schema: { type: 'object', properties: {} } },
    ],
    thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' },
          { type: 'text', text: 'And now?' },
        ],
      },
    ],
  };
}

// Issue 12 §2: token accounting of every dialect against the real addon (1 slot, so a repeated request reuses its
// prefix from the KV cache): the whole prompt is reported the same both times, the reused part separately, and
// /v1/messages/count_tokens equals what /v1/messages reports.
describe('token accounting in the compat dialects (real addon)', { skip: addon.skip }, () => {
  let t: TestApp;
  let openai: OpenAI;
  let anthropic: Anthropic;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 2048 } });
    openai = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: t.baseUrl, apiKey: 'x', maxRetries: 0 });
    const models: Array<[string, string]> = [
      ['qwen', `FROM ${TINY_QWEN2}\nPARAMETER temperature 0`],
      ['tools', `FROM ${TINY_QWEN2_TOOLS}\nPARAMETER temperature 0`],
      ['tools-go', `FROM ${TINY_QWEN2_TOOLS}\nTEMPLATE """${QWEN_TOOLS_GO_TEMPLATE}"""\nPARAMETER temperature 0`],
    ];
    for (const [model, modelfile] of models) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile, stream: false });
      assert.equal(res.status, 200, `${model}: ${await res.text()}`);
    }
  });

  after(() => t?.close());

  it('OpenAI chat: the same request twice reports the same prompt_tokens, cached_tokens > 0 the second time', async () => {
    const req = {
      model: 'qwen',
      messages: [
        { role: 'system' as const, content: 'You are terse.' },
        { role: 'user' as const, content: 'Name three colours.' },
      ],
      max_tokens: 3,
    };
    const first = await openai.chat.completions.create(req);
    const second = await openai.chat.completions.create(req);
    assert.ok(first.usage && second.usage);
    assert.ok(first.usage.prompt_tokens > 10);
    assert.equal(second.usage.prompt_tokens, first.usage.prompt_tokens);
    const cached = second.usage.prompt_tokens_details?.cached_tokens ?? 0;
    assert.ok(cached > 0 && cached < second.usage.prompt_tokens, `cached ${cached}`);
    assert.equal(second.usage.total_tokens, second.usage.prompt_tokens + second.usage.completion_tokens);
  });

  it('OpenAI chat streamed with include_usage: the same prompt size both times, cached the second time', async () => {
    const usageOf = async () => {
      const stream = await openai.chat.completions.create({
        model: 'qwen',
        messages: [{ role: 'user', content: 'Count to five, slowly and carefully.' }],
        max_tokens: 3,
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      assert.ok(usage, 'a usage chunk');
      return usage;
    };
    const first = await usageOf();
    const second = await usageOf();
    assert.equal(second.prompt_tokens, first.prompt_tokens);
    assert.ok((second.prompt_tokens_details?.cached_tokens ?? 0) > 0);
  });

  it('OpenAI completions: the same prompt twice reports the same prompt_tokens, cached the second time', async () => {
    const req = { model: 'qwen', prompt: 'Once upon a time, in a land far away,', max_tokens: 3 };
    const first = await openai.completions.create(req);
    const second = await openai.completions.create(req);
    assert.equal(second.usage?.prompt_tokens, first.usage?.prompt_tokens);
    assert.ok((second.usage?.prompt_tokens_details?.cached_tokens ?? 0) > 0);
  });

  it('Anthropic non-streamed: input_tokens + cache_read_input_tokens is the same prompt both times', async () => {
    const req = {
      model: 'qwen',
      max_tokens: 3,
      system: 'You are terse.',
      messages: [{ role: 'user' as const, content: 'Name three animals.' }],
    };
    const first = await anthropic.messages.create(req);
    const second = await anthropic.messages.create(req);
    const whole = (u: Anthropic.Usage) => u.input_tokens + (u.cache_read_input_tokens ?? 0);
    assert.ok(whole(first.usage) > 10);
    assert.equal(whole(second.usage), whole(first.usage));
    assert.ok((second.usage.cache_read_input_tokens ?? 0) > 0);
    assert.ok(second.usage.input_tokens >= 1, 'at least the last prompt token is evaluated');
    assert.equal(second.usage.cache_creation_input_tokens, 0);
    const counted = await anthropic.messages.countTokens({ model: 'qwen', system: req.system, messages: req.messages });
    assert.equal(counted.input_tokens, whole(second.usage));
  });

  it('Anthropic streamed: message_start has the whole prompt, message_delta the split; cached the second time', async () => {
    const req = {
      model: 'qwen',
      max_tokens: 3,
      messages: [{ role: 'user' as const, content: 'Describe the sea in a sentence.' }],
    };
    const run = async () => {
      const stream = anthropic.messages.stream(req);
      let start: Anthropic.Usage | undefined;
      let delta: Anthropic.MessageDeltaUsage | undefined;
      stream.on('streamEvent', (e) => {
        if (e.type === 'message_start') start = { ...e.message.usage };
        if (e.type === 'message_delta') delta = e.usage;
      });
      const final = await stream.finalMessage();
      assert.ok(start && delta);
      return { start, delta, final };
    };
    const first = await run();
    const second = await run();
    const prompt = first.start.input_tokens + (first.start.cache_read_input_tokens ?? 0);
    const counted = await anthropic.messages.countTokens({ model: 'qwen', messages: req.messages });
    assert.equal(prompt, counted.input_tokens, 'message_start carries the real prompt size');
    for (const { start, delta, final } of [first, second]) {
      assert.equal(start.input_tokens + (start.cache_read_input_tokens ?? 0), prompt);
      assert.equal((delta.input_tokens ?? 0) + (delta.cache_read_input_tokens ?? 0), prompt);
      assert.equal(final.usage.input_tokens + (final.usage.cache_read_input_tokens ?? 0), prompt);
    }
    assert.ok((second.delta.cache_read_input_tokens ?? 0) > 0);
    assert.equal(second.final.usage.cache_read_input_tokens, second.delta.cache_read_input_tokens);
  });

  for (const model of ['tools', 'tools-go']) {
    it(`count_tokens == input_tokens + cache_read_input_tokens with system blocks, tools, thinking (${model})`, async () => {
      const body = toolsBody(model);
      const msg = await anthropic.messages.create(body);
      const { max_tokens: _maxTokens, ...countBody } = body;
      const counted = await anthropic.messages.countTokens(countBody);
      assert.ok(counted.input_tokens > 100, `the tools reached the prompt: ${counted.input_tokens}`);
      assert.equal(counted.input_tokens, msg.usage.input_tokens + (msg.usage.cache_read_input_tokens ?? 0));
      // Streamed: message_start's sum is the same count.
      const stream = anthropic.messages.stream(body);
      let startSum = -1;
      stream.on('streamEvent', (e) => {
        if (e.type === 'message_start') {
          startSum = e.message.usage.input_tokens + (e.message.usage.cache_read_input_tokens ?? 0);
        }
      });
      await stream.finalMessage();
      assert.equal(startSum, counted.input_tokens);
    });
  }

  it('completions: a prompt array of 2 gives choices 0 and 1 (each as its prompt alone), usage summed', async () => {
    const prompts = ['The capital of France is', 'Water boils at'];
    const alone = await Promise.all(
      prompts.map((prompt) => openai.completions.create({ model: 'qwen', prompt, max_tokens: 4, temperature: 0 })),
    );
    const both = await openai.completions.create({ model: 'qwen', prompt: prompts, max_tokens: 4, temperature: 0 });
    assert.equal(both.choices.length, 2);
    assert.deepEqual(
      both.choices.map((c) => c.index),
      [0, 1],
    );
    assert.deepEqual(
      both.choices.map((c) => c.text),
      alone.map((r) => r.choices[0].text),
      'greedy: each choice is its prompt alone',
    );
    assert.equal(
      both.usage?.prompt_tokens,
      alone.reduce((n, r) => n + (r.usage?.prompt_tokens ?? 0), 0),
    );
    assert.equal(both.usage?.completion_tokens, 8);
  });

  it('completions streamed with 2 prompts: every chunk carries its choice index, one finish per choice', async () => {
    const stream = await openai.completions.create({
      model: 'qwen',
      prompt: ['The capital of France is', 'Water boils at'],
      max_tokens: 4,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ['', ''];
    const finishes: Array<string | null>[] = [[], []];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        texts[c.index] += c.text;
        if (c.finish_reason) finishes[c.index].push(c.finish_reason);
      }
    }
    assert.deepEqual(finishes, [['length'], ['length']]);
    const whole = await openai.completions.create({
      model: 'qwen',
      prompt: ['The capital of France is', 'Water boils at'],
      max_tokens: 4,
      temperature: 0,
    });
    assert.deepEqual(
      texts,
      whole.choices.map((c) => c.text),
    );
    assert.equal(usage?.completion_tokens, 8);
  });

  it('completions: token-id prompts (one array, or an array of arrays) are the same as their text', async () => {
    const text = await openai.completions.create({
      model: 'qwen',
      prompt: 'Hello world',
      max_tokens: 4,
      temperature: 0,
    });
    const ids = await openai.completions.create({
      model: 'qwen',
      prompt: HELLO_WORLD_IDS,
      max_tokens: 4,
      temperature: 0,
    });
    assert.equal(ids.choices.length, 1);
    assert.equal(ids.choices[0].text, text.choices[0].text);
    assert.equal(ids.usage?.prompt_tokens, text.usage?.prompt_tokens);
    const nested = await openai.completions.create({
      model: 'qwen',
      prompt: [HELLO_WORLD_IDS, HELLO_WORLD_IDS],
      max_tokens: 4,
      temperature: 0,
    });
    assert.deepEqual(
      nested.choices.map((c) => [c.index, c.text]),
      [
        [0, text.choices[0].text],
        [1, text.choices[0].text],
      ],
    );
  });

  it('completions: malformed prompts and unknown token ids are 400s', async () => {
    const bad = async (prompt: unknown, message: RegExp) => {
      await assert.rejects(
        openai.completions.create({ model: 'qwen', prompt: prompt as string, max_tokens: 2 }),
        (err: unknown) => {
          assert.ok(err instanceof BadRequestError, String(err));
          assert.match(err.message, message);
          assert.equal((err.error as { param?: string } | undefined)?.param, 'prompt');
          return true;
        },
      );
    };
    await bad([], /prompt must not be an empty array/);
    await bad(['a', 1], /mixing/);
    await bad([[1], []], /prompt\[1\] must not be an empty array/);
    await assert.rejects(
      openai.completions.create({ model: 'qwen', prompt: [999_999_999], max_tokens: 2 }),
      (err: unknown) => err instanceof BadRequestError && /out of range/.test(err.message),
    );
  });

  it('a Modelfile stop is end_turn, a request stop_sequence is stop_sequence (Anthropic)', async () => {
    const base = { max_tokens: 16, messages: [{ role: 'user' as const, content: 'Tell me a story' }] };
    const text = (m: Anthropic.Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    const full = text(await anthropic.messages.create({ ...base, model: 'qwen' }));
    const at = [...full].findIndex((_, i) => i >= 1 && /\S\S/.test(full.slice(i, i + 2)));
    assert.ok(at >= 1, `greedy output too short for a stop: ${JSON.stringify(full)}`);
    const stop = full.slice(at, at + 2);
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'qwen-stop',
      modelfile: `FROM ${TINY_QWEN2}\nPARAMETER temperature 0\nPARAMETER stop "${stop.replace(/["\\]/g, '\\$&')}"`,
      stream: false,
    });
    assert.equal(res.status, 200, await res.text());

    const byModelfile = await anthropic.messages.create({ ...base, model: 'qwen-stop' });
    assert.equal(text(byModelfile), full.slice(0, full.indexOf(stop)), 'the Modelfile stop ended it');
    assert.equal(byModelfile.stop_reason, 'end_turn');
    assert.equal(byModelfile.stop_sequence, null);
    const streamed = await anthropic.messages.stream({ ...base, model: 'qwen-stop' }).finalMessage();
    assert.equal(streamed.stop_reason, 'end_turn');
    assert.equal(streamed.stop_sequence, null);

    const byRequest = await anthropic.messages.create({ ...base, model: 'qwen-stop', stop_sequences: [stop] });
    assert.equal(byRequest.stop_reason, 'stop_sequence');
    assert.equal(byRequest.stop_sequence, stop);
  });
});
