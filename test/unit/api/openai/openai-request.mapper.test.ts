import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError } from '../../../../src/common/errors';
import {
  decodeCompletionPrompt,
  decodeImageUrl,
  decodeMessages,
  fromOpenAIChatRequest,
  fromOpenAICompletionRequest,
  fromOpenAIEmbeddingRequest,
} from '../../../../src/api/openai/openai-request.mapper';

const T0 = 0n;
const rejects400 = (fn: () => unknown, message: string | RegExp) =>
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidRequestError);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });

describe('OpenAI request mapper (§12.2–§12.4)', () => {
  it('maps a full chat request to a ChatCommand', () => {
    const cmd = fromOpenAIChatRequest(
      {
        model: 'm',
        messages: [
          { role: 'developer', content: 'sys' },
          { role: 'user', content: 'hi' },
        ],
        max_tokens: 7,
        temperature: 0.2,
        top_p: 0.9,
        stop: 'END',
        seed: 4,
        frequency_penalty: 0.1,
        presence_penalty: 0.3,
        response_format: { type: 'json_object' },
        logprobs: true,
        top_logprobs: 3,
        reasoning_effort: 'xhigh',
      },
      T0,
    );
    assert.equal(cmd.model, 'm');
    assert.deepEqual(cmd.messages, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hi' },
    ]);
    assert.deepEqual(cmd.options, {
      num_predict: 7,
      temperature: 0.2,
      top_p: 0.9,
      seed: 4,
      frequency_penalty: 0.1,
      presence_penalty: 0.3,
      stop: ['END'],
    });
    assert.deepEqual(cmd.format, { kind: 'json' });
    assert.equal(cmd.topLogprobs, 3);
    assert.equal(cmd.think, 'max');
  });

  it('defaults temperature and top_p to 1, reads max_completion_tokens, maps json_schema', () => {
    const cmd = fromOpenAIChatRequest(
      {
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        max_completion_tokens: 3,
        response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'object' } } },
      },
      T0,
    );
    assert.deepEqual(cmd.options, { num_predict: 3, temperature: 1, top_p: 1 });
    assert.deepEqual(cmd.format, { kind: 'schema', schema: { type: 'object' } });
    assert.equal(cmd.topLogprobs, undefined);
    assert.equal(cmd.think, undefined);
  });

  it('content parts, images, tool calls and tool results', () => {
    const msgs = decodeMessages([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,QUJD' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        reasoning: 'hmm',
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get', arguments: '{"city":"Oslo"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '20C' },
    ]);
    assert.deepEqual(msgs, [
      { role: 'user', content: 'look' },
      { role: 'user', content: '', images: ['QUJD'] },
      {
        role: 'assistant',
        content: '',
        thinking: 'hmm',
        toolCalls: [{ id: 'call_1', function: { index: 0, name: 'get', arguments: { city: 'Oslo' } } }],
      },
      { role: 'tool', content: '20C', toolName: 'get', toolCallId: 'call_1' },
    ]);
  });

  it("rejects with Ollama's compat texts", () => {
    rejects400(() => decodeMessages([]), "[] is too short - 'messages'");
    rejects400(() => decodeMessages([{ role: 'user', content: 5 }]), 'invalid message content type: float64');
    rejects400(() => decodeMessages([{ content: 'x' }]), 'invalid message format');
    rejects400(
      () => decodeImageUrl('https://x/y.png'),
      'image URLs are not currently supported, please use base64 encoded data instead',
    );
    rejects400(() => decodeImageUrl({ url: 'data:text/plain;base64,QQ==' }), 'invalid image input');
    rejects400(
      () =>
        decodeMessages([
          { role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{' } }] },
        ]),
      'invalid tool call arguments',
    );
    rejects400(
      () => fromOpenAIChatRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], stop: [1] }, T0),
      "invalid type for 'stop' field: float64",
    );
    rejects400(
      () =>
        fromOpenAIChatRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'x' }, T0),
      /^invalid reasoning value: "x"/,
    );
    rejects400(
      () =>
        fromOpenAIChatRequest(
          { model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'y' } },
          T0,
        ),
      /response_format/,
    );
  });

  it('tool_choice "none" drops the tools; otherwise they pass through', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const base = { model: 'm', messages: [{ role: 'user', content: 'x' }], tools };
    assert.deepEqual(fromOpenAIChatRequest({ ...base, tool_choice: 'auto' }, T0).tools, tools);
    assert.equal(fromOpenAIChatRequest({ ...base, tool_choice: 'none' }, T0).tools, undefined);
  });

  it('completions: prompt string, suffix, logprobs n', () => {
    const cmds = fromOpenAICompletionRequest({ model: 'm', prompt: 'p', suffix: 's', max_tokens: 2, logprobs: 2 }, T0);
    assert.equal(cmds.length, 1);
    const [cmd] = cmds;
    assert.equal(cmd.prompt, 'p');
    assert.equal(cmd.promptTokens, undefined);
    assert.equal(cmd.suffix, 's');
    assert.equal(cmd.raw, false);
    assert.equal(cmd.topLogprobs, 2);
    assert.equal(cmd.growContext, true);
    assert.deepEqual(cmd.options, { num_predict: 2, temperature: 1, top_p: 1 });
    assert.equal(fromOpenAICompletionRequest({ model: 'm' }, T0)[0].prompt, '', 'absent: one empty prompt (load)');
  });

  it('completions: prompt arrays of strings, token ids and token-id arrays give one command per prompt', () => {
    const strings = fromOpenAICompletionRequest({ model: 'm', prompt: ['a', 'b'], suffix: 's' }, T0);
    assert.deepEqual(
      strings.map((c) => [c.prompt, c.suffix, c.promptTokens]),
      [
        ['a', 's', undefined],
        ['b', 's', undefined],
      ],
    );
    const tokens = fromOpenAICompletionRequest({ model: 'm', prompt: [1, 2, 3] }, T0);
    assert.deepEqual(
      tokens.map((c) => [c.prompt, c.promptTokens]),
      [['', [1, 2, 3]]],
    );
    const nested = fromOpenAICompletionRequest({ model: 'm', prompt: [[5], [6, 7]] }, T0);
    assert.deepEqual(
      nested.map((c) => c.promptTokens),
      [[5], [6, 7]],
    );
    assert.ok(nested.every((c) => c.growContext === true && c.model === 'm'));
    assert.deepEqual(decodeCompletionPrompt(['x']), [{ text: 'x' }]);
  });

  it('completions: malformed prompts are 400s naming the prompt', () => {
    const escape = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    const bad = (prompt: unknown, text: string) =>
      rejects400(() => fromOpenAICompletionRequest({ model: 'm', prompt }, T0), escape(text));
    bad([], 'prompt must not be an empty array');
    bad(['a', 1], 'not an array mixing them');
    bad([[1], 'a'], 'not an array mixing them');
    bad([[1], []], 'prompt[1] must not be an empty array');
    bad([[1], ['a']], 'prompt[1] is not token ids');
    bad([1.5], 'prompt token ids must be non-negative integers');
    bad([[-1]], 'prompt token ids must be non-negative integers');
    bad([2 ** 31], 'prompt token ids must be non-negative integers');
    bad(42, 'prompt must be a string, an array of strings, an array of token ids, or an array of token-id arrays');
    bad({ text: 'a' }, 'prompt must be a string');
    assert.throws(
      () => fromOpenAICompletionRequest({ model: 'm', prompt: [] }, T0),
      (err: unknown) => err instanceof InvalidRequestError && err.param === 'prompt',
    );
  });

  it('chat: the compat layer never cuts the prompt (growContext)', () => {
    const cmd = fromOpenAIChatRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, T0);
    assert.equal(cmd.growContext, true);
  });

  it('embeddings: input forms, encoding_format, dimensions', () => {
    const one = fromOpenAIEmbeddingRequest({ model: 'm', input: 'a' }, T0);
    assert.deepEqual(one.command.input, ['a']);
    assert.equal(one.encoding, 'float');
    assert.deepEqual(fromOpenAIEmbeddingRequest({ model: 'm', input: '' }, T0).command.input, ['']);
    const many = fromOpenAIEmbeddingRequest(
      { model: 'm', input: ['a', 'b'], encoding_format: 'base64', dimensions: 8 },
      T0,
    );
    assert.deepEqual(many.command.input, ['a', 'b']);
    assert.equal(many.encoding, 'base64');
    assert.equal(many.command.dimensions, 8);
    rejects400(() => fromOpenAIEmbeddingRequest({ model: 'm', input: [] }, T0), 'invalid input');
    rejects400(() => fromOpenAIEmbeddingRequest({ model: 'm', input: null }, T0), 'invalid input');
    rejects400(() => fromOpenAIEmbeddingRequest({ model: 'm', input: [[1, 2]] }, T0), 'invalid input');
    rejects400(
      () => fromOpenAIEmbeddingRequest({ model: 'm', input: 'a', encoding_format: 'hex' }, T0),
      "Invalid value for 'encoding_format' = hex. Supported values: ['float', 'base64'].",
    );
  });
});
