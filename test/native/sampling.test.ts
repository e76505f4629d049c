// Structured output (JSON Schema -> GBNF grammar), lazy grammars, preserved tokens and logprobs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_LLAMA_SPM, TINY_QWEN2, ensureTestModels } from '../utils/models';
import { GREEDY, assertThrowsCode, binding, loadModel, runTask, seeded } from './native-helpers';

ensureTestModels();

const SCHEMA = JSON.stringify({ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] });

function assertValid(text: string): void {
  const value = JSON.parse(text) as Record<string, unknown>;
  assert.equal(typeof value, 'object');
  assert.deepEqual(Object.keys(value), ['a'], text);
  assert.ok(Number.isInteger(value.a), text);
}

describe('jsonSchemaToGrammar', () => {
  it('converts a schema to GBNF with a root rule', () => {
    const grammar = binding.jsonSchemaToGrammar(SCHEMA);
    assert.match(grammar, /^root ::= /m);
    assert.match(grammar, /integer/);
  });
  it('rejects invalid JSON and unresolvable schemas with LLAMA_INVALID_ARGUMENT', () => {
    assertThrowsCode(() => binding.jsonSchemaToGrammar('{not json'), 'LLAMA_INVALID_ARGUMENT');
    assertThrowsCode(
      () => binding.jsonSchemaToGrammar(JSON.stringify({ properties: { a: { $ref: '#/missing' } } })),
      'LLAMA_INVALID_ARGUMENT',
    );
    assertThrowsCode(() => binding.jsonSchemaToGrammar(42 as unknown as string), 'LLAMA_INVALID_ARGUMENT');
  });
});

describe('grammar-constrained generation on the tiny SPM llama', () => {
  let model: NativeModel;
  let ctx: NativeContext;
  let prompt: Int32Array;
  const grammar = binding.jsonSchemaToGrammar(SCHEMA);

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: 1024, nParallel: 2, nThreads: 2 });
    prompt = model.tokenize('Answer in JSON:', true, false);
  });
  after(async () => {
    await ctx.dispose();
    await model.dispose();
  });

  it('greedy output parses as JSON, follows the schema and ends with eog', async () => {
    const r = await runTask(ctx, { tokens: prompt, nPredict: 256, sampling: { ...GREEDY, grammar } });
    assert.equal(r.done.reason, 'eog', r.text);
    assertValid(r.text);
  });

  it('seeded outputs parse and follow the schema', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const r = await runTask(ctx, { tokens: prompt, nPredict: 256, sampling: { ...seeded(seed, 1.2), grammar } });
      assert.equal(r.done.reason, 'eog', r.text);
      assertValid(r.text);
    }
  });

  it('with ignoreEos the task still ends (eog) once the grammar is complete', async () => {
    const r = await runTask(ctx, { tokens: prompt, nPredict: 256, ignoreEos: true, sampling: { ...GREEDY, grammar } });
    assert.equal(r.done.reason, 'eog');
    assertValid(r.text);
  });

  it('a lazy grammar is free until its trigger (token or word), then constrains', async () => {
    const free = await runTask(ctx, { tokens: prompt, nPredict: 8, ignoreEos: true, logprobs: 0 });
    // A trigger that never occurs: the output equals the unconstrained output.
    const untriggered = await runTask(ctx, {
      tokens: prompt,
      nPredict: 8,
      ignoreEos: true,
      sampling: { ...GREEDY, grammar, grammarLazy: true, grammarTriggers: [{ type: 'word', value: '<never(seen)>' }] },
    });
    assert.deepEqual(untriggered.tokens, free.tokens);
    // Trigger on the first token the free run produces; the grammar then starts with that token's piece.
    const trigger = free.tokenEvents[0];
    const piece = Buffer.from(trigger.bytes ?? new Uint8Array()).toString('utf8');
    const lazyGrammar = `root ::= ${JSON.stringify(piece)} "[" [0-9]{1,4} "]"`;
    for (const triggers of [
      [{ type: 'token' as const, value: '', token: trigger.token }],
      [{ type: 'word' as const, value: piece }],
    ]) {
      const r = await runTask(ctx, {
        tokens: prompt,
        nPredict: 64,
        sampling: { ...GREEDY, grammar: lazyGrammar, grammarLazy: true, grammarTriggers: triggers },
      });
      assert.equal(r.tokens[0], free.tokens[0]);
      assert.equal(r.done.reason, 'eog', r.text);
      const after = Buffer.concat(r.tokenEvents.slice(1).map((e) => Buffer.from(e.text))).toString('utf8');
      assert.match(after, /^\[[0-9]{1,4}\]$/, JSON.stringify(r.text));
    }
    assertThrowsCode(
      () =>
        ctx.submit(
          {
            tokens: prompt,
            nPredict: 4,
            sampling: {
              ...GREEDY,
              grammar,
              grammarLazy: true,
              grammarTriggers: [{ type: 'nope' as 'word', value: 'x' }],
            },
          },
          () => {},
        ),
      'LLAMA_INVALID_ARGUMENT',
    );
  });
});

describe('logprobs', () => {
  let model: NativeModel;
  let ctx: NativeContext;
  let prompt: Int32Array;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: 512, nThreads: 2 });
    prompt = model.tokenize('Once upon a time', true, false);
  });
  after(async () => {
    await ctx.dispose();
    await model.dispose();
  });

  it('greedy: the sampled token is the top-1 alternative; values <= 0, sorted', async () => {
    const r = await runTask(ctx, { tokens: prompt, nPredict: 12, logprobs: 5 });
    const plain = await runTask(ctx, { tokens: prompt, nPredict: 12 });
    assert.deepEqual(r.tokens, plain.tokens, 'logprobs do not change sampling');
    for (const e of r.tokenEvents) {
      assert.ok(e.bytes instanceof Uint8Array);
      assert.ok(typeof e.logprob === 'number' && e.logprob <= 0);
      const top = e.topLogprobs ?? [];
      assert.equal(top.length, 5);
      for (let i = 1; i < top.length; i++) assert.ok(top[i - 1].logprob >= top[i].logprob);
      assert.ok(top.every((t) => t.logprob <= 0 && t.bytes instanceof Uint8Array));
      assert.equal(top[0].token, e.token);
      assert.ok(Math.abs(top[0].logprob - e.logprob) < 1e-6);
      if (e.text !== '') {
        assert.equal(Buffer.from(e.bytes).toString('utf8').replace(/^ /, ''), e.text.replace(/^ /, ''));
      }
    }
    // Probabilities of the alternatives sum to at most 1.
    const mass = (r.tokenEvents[0].topLogprobs ?? []).reduce((s, t) => s + Math.exp(t.logprob), 0);
    assert.ok(mass <= 1 + 1e-5);
  });

  it('logprobs 0 reports only the sampled token; without logprobs no fields', async () => {
    const zero = await runTask(ctx, { tokens: prompt, nPredict: 3, logprobs: 0, sampling: seeded(7) });
    assert.ok(zero.tokenEvents.every((e) => e.logprob !== undefined && e.topLogprobs?.length === 0));
    const none = await runTask(ctx, { tokens: prompt, nPredict: 3 });
    assert.ok(none.tokenEvents.every((e) => e.logprob === undefined && e.topLogprobs === undefined));
    assertThrowsCode(
      () => ctx.submit({ tokens: prompt, nPredict: 1, sampling: GREEDY, logprobs: 21 }, () => {}),
      'LLAMA_INVALID_ARGUMENT',
    );
  });
});

describe('grammar speed on the 152k-token qwen2 vocabulary', () => {
  it('generates schema JSON and reports per-token time with and without the grammar', async (t) => {
    const model = await loadModel(TINY_QWEN2);
    const ctx = new binding.Context(model, { nCtx: 512, nThreads: 1 });
    const prompt = model.tokenize('Answer in JSON:', false, false);
    const grammar = binding.jsonSchemaToGrammar(SCHEMA);
    const free = await runTask(ctx, { tokens: prompt, nPredict: 32, ignoreEos: true });
    const constrained = await runTask(ctx, { tokens: prompt, nPredict: 256, sampling: { ...GREEDY, grammar } });
    assert.equal(constrained.done.reason, 'eog');
    assertValid(constrained.text);
    // The grammar prefill advances the grammar past text the prompt already ends with.
    const prefilled = await runTask(ctx, {
      tokens: prompt,
      nPredict: 256,
      sampling: { ...GREEDY, grammar, grammarPrefill: '{"a":' },
    });
    assert.equal(prefilled.done.reason, 'eog');
    assertValid(`{"a":${prefilled.text}`);
    assertThrowsCode(
      () =>
        ctx.submit({ tokens: prompt, nPredict: 4, sampling: { ...GREEDY, grammar, grammarPrefill: 'xyz' } }, () => {}),
      'LLAMA_INVALID_ARGUMENT',
    );
    const perToken = (d: typeof free.done): number =>
      d.timings.predictedNs / Math.max(1, d.timings.predictedN - 1) / 1e6;
    t.diagnostic(
      `qwen2 greedy ms/token: free ${perToken(free.done).toFixed(2)}, grammar ${perToken(constrained.done).toFixed(2)} ` +
        `(${constrained.done.timings.predictedN} tokens: ${JSON.stringify(constrained.text)})`,
    );
    await ctx.dispose();
    await model.dispose();
  });
});
