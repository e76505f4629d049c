import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lastValueFrom, of } from 'rxjs';
import { InvalidRequestError } from '../../../../src/common/errors';
import { GenerationEvent } from '../../../../src/generation/generation.types';
import {
  fromChatRequest,
  fromGenerateRequest,
  toChatChunk,
  toChatResponse,
  toGenerateChunk,
  toGenerateResponse,
} from '../../../../src/api/ollama/ollama.mapper';

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const metrics = {
  totalDurationNs: 5000,
  loadDurationNs: 100,
  promptEvalCount: 7,
  promptCachedCount: 0,
  promptEvalDurationNs: 300,
  evalCount: 2,
  evalDurationNs: 0,
};
const done: GenerationEvent = { kind: 'done', reason: 'stop', metrics, context: [1, 2] };

describe('generate chunks (§12.1)', () => {
  it('intermediate chunks carry only the common fields and the text', () => {
    const chunk = toGenerateChunk('m', { kind: 'delta', text: 'Hi' });
    assert.match(chunk.created_at, ISO_UTC);
    assert.deepEqual({ ...chunk, created_at: 'x' }, { model: 'm', created_at: 'x', response: 'Hi', done: false });
  });

  it('the final chunk has an empty response, done_reason, context and nanosecond metrics (zeros omitted)', () => {
    const chunk = toGenerateChunk('m', done);
    assert.deepEqual(Object.keys(chunk), [
      'model',
      'created_at',
      'response',
      'done',
      'done_reason',
      'context',
      'total_duration',
      'load_duration',
      'prompt_eval_count',
      'prompt_eval_duration',
      'eval_count',
    ]);
    assert.equal(chunk.response, '');
    assert.equal(chunk.done, true);
    assert.equal(chunk.total_duration, 5000);
    assert.equal(chunk.eval_duration, undefined);
  });

  it('non-streaming concatenates the text', async () => {
    const res = await lastValueFrom(
      of<GenerationEvent[]>({ kind: 'delta', text: 'a' }, { kind: 'delta', text: 'b' }, done).pipe(
        toGenerateResponse('m'),
      ),
    );
    assert.equal(res.response, 'ab');
    assert.equal(res.done, true);
    assert.equal(res.done_reason, 'stop');
    assert.deepEqual(res.context, [1, 2]);
  });

  it('load/unload answers have no metrics', () => {
    const chunk = toGenerateChunk('m', { kind: 'done', reason: 'load' });
    assert.deepEqual(
      { ...chunk, created_at: 'x' },
      { model: 'm', created_at: 'x', response: '', done: true, done_reason: 'load' },
    );
  });
});

describe('chat chunks', () => {
  it('carry message {role: assistant, content}', () => {
    assert.deepEqual(toChatChunk('m', { kind: 'delta', text: 'Hi' }).message, { role: 'assistant', content: 'Hi' });
    const last = toChatChunk('m', { kind: 'done', reason: 'length', metrics });
    assert.deepEqual(last.message, { role: 'assistant', content: '' });
    assert.equal(last.done_reason, 'length');
    assert.equal('context' in last, false);
  });

  it('non-streaming concatenates the content', async () => {
    const res = await lastValueFrom(
      of<GenerationEvent[]>({ kind: 'delta', text: 'x' }, { kind: 'delta', text: 'y' }, done).pipe(toChatResponse('m')),
    );
    assert.deepEqual(res.message, { role: 'assistant', content: 'xy' });
    assert.equal(res.prompt_eval_count, 7);
  });
});

describe('request decoding', () => {
  const started = 1n;

  it('decodes keep_alive, options and defaults', () => {
    const cmd = fromGenerateRequest({ model: 'm', keep_alive: '1m', options: { temperature: 0, unknown: 1 } }, started);
    assert.equal(cmd.prompt, '');
    assert.equal(cmd.raw, false);
    assert.equal(cmd.keepAliveMs, 60_000);
    assert.deepEqual(cmd.options, { temperature: 0 });
    assert.equal(fromGenerateRequest({ format: '' }, started).format, undefined);
  });

  it('passes shift through (absent = undefined, i.e. the default true)', () => {
    assert.equal(fromGenerateRequest({ model: 'm' }, started).shift, undefined);
    assert.equal(fromGenerateRequest({ model: 'm', shift: false }, started).shift, false);
    assert.equal(fromChatRequest({ model: 'm', messages: [], shift: false }, started).shift, false);
    assert.equal(fromChatRequest({ model: 'm', messages: [], shift: true }, started).shift, true);
  });

  const bad: Array<[Record<string, unknown>, string]> = [
    [{ keep_alive: '300' }, 'time: missing unit in duration "300"'],
    [{ think: 'very' }, 'invalid think value: "very" (must be "high", "medium", "low", "max", true, or false)'],
    [{ think: 3 }, 'think must be a boolean or string ("high", "medium", "low", "max", true, or false)'],
    [{ top_logprobs: 21 }, 'top_logprobs must be between 0 and 20'],
    [{ options: { num_ctx: 'big' } }, 'option "num_ctx" must be of type integer'],
  ];
  for (const [body, message] of bad) {
    it(`rejects ${JSON.stringify(body)}`, () => {
      assert.throws(
        () => fromGenerateRequest(body, started),
        (e: unknown) => e instanceof InvalidRequestError && e.message === message,
      );
    });
  }

  it('lower-cases chat roles and defaults content', () => {
    const cmd = fromChatRequest({ model: 'm', messages: [{ role: 'USER' }] }, started);
    assert.deepEqual(cmd.messages, [{ role: 'user', content: '' }]);
    assert.throws(() => fromChatRequest({ messages: [{ content: 'x' }] }, started), InvalidRequestError);
  });
});
