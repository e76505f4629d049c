import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { from, lastValueFrom, Observable, toArray } from 'rxjs';
import { InternalError, InvalidRequestError, ModelNotFoundError, ServerBusyError } from '../../../../src/common/errors';
import { toOpenAIError } from '../../../../src/api/openai/openai-error';
import {
  toBase64Float32,
  toChatCompletion,
  toChatCompletionChunks,
  toCompletion,
  toCompletionChunks,
  toEmbeddingResponse,
  toUsage,
} from '../../../../src/api/openai/openai-response.mapper';
import type { GenerationEvent, GenerationMetrics } from '../../../../src/generation';

const META = { id: 'chatcmpl-1', created: 100, model: 'm' };
const METRICS: GenerationMetrics = {
  totalDurationNs: 1,
  loadDurationNs: 1,
  promptEvalCount: 5,
  promptCachedCount: 0,
  promptEvalDurationNs: 1,
  evalCount: 3,
  evalDurationNs: 1,
};
const HEAD = {
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 100,
  model: 'm',
  system_fingerprint: 'fp_ollama',
};

async function chunks(events: GenerationEvent[], includeUsage = false) {
  return lastValueFrom(
    from(events).pipe(toChatCompletionChunks(META, { includeUsage, withLogprobs: false }), toArray()),
  );
}

describe('OpenAI response mapper (§12.2–§12.4)', () => {
  it('stream converter: golden chunk sequence (role first, reasoning split, finish, usage)', async () => {
    const out = await chunks(
      [
        { kind: 'delta', text: 'He', thinking: 'think' },
        { kind: 'delta', text: 'llo' },
        { kind: 'delta', text: '' },
        { kind: 'done', reason: 'stop', metrics: METRICS },
      ],
      true,
    );
    assert.deepEqual(out, [
      {
        ...HEAD,
        choices: [{ index: 0, delta: { role: 'assistant', content: '', reasoning: 'think' }, finish_reason: null }],
      },
      { ...HEAD, choices: [{ index: 0, delta: { content: 'He' }, finish_reason: null }] },
      { ...HEAD, choices: [{ index: 0, delta: { content: 'llo' }, finish_reason: null }] },
      { ...HEAD, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      {
        ...HEAD,
        choices: [],
        usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, prompt_tokens_details: { cached_tokens: 0 } },
      },
    ]);
  });

  it('stream converter: empty output still has a role chunk; tool calls → tool_calls with running index', async () => {
    const empty = await chunks([{ kind: 'done', reason: 'length', metrics: METRICS }]);
    assert.deepEqual(empty, [
      { ...HEAD, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
      { ...HEAD, choices: [{ index: 0, delta: {}, finish_reason: 'length' }] },
    ]);
    const tools = await chunks([
      { kind: 'delta', text: '', toolCalls: [{ id: 'c1', function: { index: 0, name: 'a', arguments: { x: 1 } } }] },
      { kind: 'done', reason: 'stop', toolCalls: [{ function: { index: 0, name: 'b', arguments: {} } }] },
    ]);
    assert.equal(tools.length, 3);
    assert.deepEqual(tools[0].choices[0].delta.tool_calls, [
      { id: 'c1', index: 0, type: 'function', function: { name: 'a', arguments: '{"x":1}' } },
    ]);
    const second = tools[1].choices[0].delta.tool_calls?.[0];
    assert.equal(second?.index, 1);
    assert.match(second?.id ?? '', /^call_[0-9a-f]{24}$/);
    assert.equal(tools[2].choices[0].finish_reason, 'tool_calls');
  });

  it('non-stream fold: content, reasoning, tool calls, usage, logprobs', async () => {
    const res = await lastValueFrom(
      from<GenerationEvent[]>([
        {
          kind: 'delta',
          text: 'a',
          thinking: 't',
          logprobs: [
            { token: 'a', logprob: -0.5, bytes: [97], topLogprobs: [{ token: 'b', logprob: -1, bytes: [98] }] },
          ],
        },
        { kind: 'done', reason: 'stop', text: 'b', metrics: METRICS },
      ]).pipe(toChatCompletion(META, true)),
    );
    assert.deepEqual(res, {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 100,
      model: 'm',
      system_fingerprint: 'fp_ollama',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'ab', reasoning: 't' },
          finish_reason: 'stop',
          logprobs: {
            content: [
              { token: 'a', logprob: -0.5, bytes: [97], top_logprobs: [{ token: 'b', logprob: -1, bytes: [98] }] },
            ],
          },
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, prompt_tokens_details: { cached_tokens: 0 } },
    });
  });

  it('completion chunks: text chunks, finish chunk, usage chunk', async () => {
    const out = await lastValueFrom(
      toCompletionChunks(
        { ...META, id: 'cmpl-1' },
        [
          from<GenerationEvent[]>([
            { kind: 'delta', text: 'x' },
            { kind: 'done', reason: 'length', metrics: METRICS },
          ]),
        ],
        true,
      ).pipe(toArray()),
    );
    assert.deepEqual(
      out.map((c) => [c.choices.map((ch) => [ch.text, ch.finish_reason]), c.usage?.total_tokens]),
      [
        [[['x', null]], undefined],
        [[['', 'length']], undefined],
        [[], 8],
      ],
    );
  });

  it('usage: prompt_tokens is the whole prompt, cached_tokens its reused part', () => {
    assert.deepEqual(toUsage({ ...METRICS, promptEvalCount: 40, promptCachedCount: 31 }), {
      prompt_tokens: 40,
      completion_tokens: 3,
      total_tokens: 43,
      prompt_tokens_details: { cached_tokens: 31 },
    });
    assert.deepEqual(toUsage(undefined), {
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      prompt_tokens_details: { cached_tokens: 0 },
    });
  });

  it('completions with several prompts: one choice per prompt by index, usage summed', async () => {
    const second: GenerationMetrics = { ...METRICS, promptEvalCount: 7, promptCachedCount: 4, evalCount: 2 };
    const sources = () => [
      from<GenerationEvent[]>([
        { kind: 'delta', text: 'a' },
        { kind: 'delta', text: 'b' },
        { kind: 'done', reason: 'stop', metrics: METRICS },
      ]),
      from<GenerationEvent[]>([
        { kind: 'delta', text: 'c' },
        { kind: 'done', reason: 'length', metrics: second },
      ]),
    ];
    const whole = await lastValueFrom(toCompletion({ ...META, id: 'cmpl-2' }, sources()));
    assert.equal(whole.object, 'text_completion');
    assert.deepEqual(whole.choices, [
      { text: 'ab', index: 0, finish_reason: 'stop', logprobs: null },
      { text: 'c', index: 1, finish_reason: 'length', logprobs: null },
    ]);
    assert.deepEqual(whole.usage, {
      prompt_tokens: 12,
      completion_tokens: 5,
      total_tokens: 17,
      prompt_tokens_details: { cached_tokens: 4 },
    });

    const streamed = await lastValueFrom(
      toCompletionChunks({ ...META, id: 'cmpl-2' }, sources(), true).pipe(toArray()),
    );
    const byIndex = (i: number) =>
      streamed.flatMap((c) => c.choices.filter((ch) => ch.index === i).map((ch) => [ch.text, ch.finish_reason]));
    assert.deepEqual(byIndex(0), [
      ['a', null],
      ['b', null],
      ['', 'stop'],
    ]);
    assert.deepEqual(byIndex(1), [
      ['c', null],
      ['', 'length'],
    ]);
    const last = streamed.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage?.prompt_tokens, 12);
    assert.equal(last.usage?.prompt_tokens_details.cached_tokens, 4);
    assert.equal(streamed.filter((c) => c.usage).length, 1, 'one usage chunk, after every choice finished');
  });

  it('completions: an error of one prompt fails the whole response', async () => {
    const failing = new Observable<GenerationEvent>((s) => s.error(new InvalidRequestError('boom')));
    await assert.rejects(
      lastValueFrom(toCompletion(META, [from<GenerationEvent[]>([{ kind: 'done', reason: 'stop' }]), failing])),
      /boom/,
    );
  });

  it('embeddings: base64 is little-endian float32', () => {
    assert.equal(toBase64Float32([1, -2]), Buffer.from([0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0]).toString('base64'));
    const res = toEmbeddingResponse(
      'm',
      { embeddings: [[0.5]], totalDurationNs: 1, loadDurationNs: 1, promptEvalCount: 4 },
      'float',
    );
    assert.deepEqual(res, {
      object: 'list',
      data: [{ object: 'embedding', embedding: [0.5], index: 0 }],
      model: 'm',
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
  });

  it('errors: OpenAI shape, types by status, x-should-retry only on deterministic 5xx', () => {
    assert.deepEqual(toOpenAIError(new InvalidRequestError('bad', 'messages')), {
      status: 400,
      body: { error: { message: 'bad', type: 'invalid_request_error', param: 'messages', code: null } },
    });
    assert.deepEqual(toOpenAIError(new ModelNotFoundError('x')), {
      status: 404,
      body: { error: { message: "model 'x' not found", type: 'not_found_error', param: null, code: null } },
    });
    const internal = toOpenAIError(new InternalError('boom'));
    assert.equal(internal.status, 500);
    assert.equal(internal.body.error.type, 'api_error');
    assert.equal(internal.shouldRetry, false);
    const busy = toOpenAIError(new ServerBusyError());
    assert.equal(busy.status, 503);
    assert.equal(busy.shouldRetry, undefined);
  });
});
