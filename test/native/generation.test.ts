// Context generation: determinism, continuous batching, limits, cancel, stop strings, prefix reuse, UTF-8 text.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { TINY_LLAMA_SPM, TINY_QWEN2, ensureTestModels } from '../utils/models';
import { GREEDY, assertThrowsCode, binding, isWellFormed, loadModel, runTask, seeded } from './native-helpers';

ensureTestModels();

describe('generation on the tiny SPM llama', () => {
  let model: NativeModel;
  let ctx: NativeContext;
  let prompt: Int32Array;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: 512, nParallel: 2, nThreads: 2, nBatch: 512 });
    prompt = model.tokenize('Once upon a time there was a little llama', true, false);
  });
  after(async () => {
    await ctx.dispose();
    await model.dispose();
  });

  it('reports its shape in stats()', () => {
    const stats = ctx.stats();
    assert.equal(stats.nCtx, 512);
    assert.equal(stats.nCtxSlot, 256);
    assert.equal(stats.nParallel, 2);
    assert.equal(stats.activeSlots, 0);
    assert.equal(stats.queuedTasks, 0);
    assert.equal(typeof stats.decodeSteps, 'number');
    assert.equal(typeof stats.graphsReused, 'number');
    assert.ok(stats.kvSize > 0);
  });

  it('greedy generation is deterministic and its text is the detokenized tokens', async () => {
    const a = await runTask(ctx, { tokens: prompt, nPredict: 24, ignoreEos: true });
    const b = await runTask(ctx, { tokens: prompt, nPredict: 24, ignoreEos: true });
    assert.deepEqual(b.tokens, a.tokens);
    assert.equal(b.text, a.text);
    assert.equal(a.done.reason, 'length');
    // BOS first keeps SPM's leading space, so this is the plain concatenation of the pieces.
    assert.equal(a.text, model.detokenize(Int32Array.from([1, ...a.tokens]), true, false));
    assert.ok(a.tokenEvents.every((e) => isWellFormed(e.text)));
  });

  it('nPredict ends with reason length after exactly nPredict tokens', async () => {
    const r = await runTask(ctx, { tokens: prompt, nPredict: 7, ignoreEos: true });
    assert.equal(r.done.reason, 'length');
    assert.equal(r.tokenEvents.length, 7);
    assert.equal(r.done.timings.predictedN, 7);
    assert.equal(r.done.timings.promptTotal, prompt.length);
    assert.ok(r.done.timings.promptNs > 0);
    assert.ok(r.done.timings.predictedNs > 0);
    const zero = await runTask(ctx, { tokens: prompt, nPredict: 0 });
    assert.equal(zero.done.reason, 'length');
    assert.equal(zero.tokenEvents.length, 0);
  });

  it('a full slot context ends with reason length', async () => {
    const nCtxSlot = ctx.stats().nCtxSlot;
    const long = new Int32Array(nCtxSlot - 4).fill(450);
    long[0] = 1;
    const r = await runTask(ctx, { tokens: long, nPredict: -1, ignoreEos: true });
    assert.equal(r.done.reason, 'length');
    // Every sampled token but the last is decoded: prompt + (n - 1) = nCtxSlot.
    assert.equal(r.tokenEvents.length, 5);
  });

  it('seeded sampling is deterministic for a fixed seed', async () => {
    // Each run on a fresh context: a second run on the same slot reuses the cached prompt and re-evaluates only its
    // last token in a batch of one, which GPU kernels compute with other rounding than the whole-prompt batch, and a
    // random-weight model's near-flat distribution then samples differently. The sampler is what is tested here.
    const fresh = async () => {
      const c = new binding.Context(model, { nCtx: 256, nParallel: 1, nThreads: 2, nBatch: 512 });
      try {
        return await runTask(c, { tokens: prompt, nPredict: 24, sampling: seeded(1234), ignoreEos: true });
      } finally {
        await c.dispose();
      }
    };
    const a = await fresh();
    const b = await fresh();
    assert.deepEqual(b.tokens, a.tokens);
    const greedy = await runTask(ctx, { tokens: prompt, nPredict: 24, ignoreEos: true });
    assert.notDeepEqual(a.tokens, greedy.tokens, 'temperature 0.9 samples something else than greedy');
  });

  it('two concurrent tasks on a 2-slot context equal their single runs', async () => {
    const other = model.tokenize('The quick brown fox jumps over', true, false);
    const soloA = await runTask(ctx, { tokens: prompt, nPredict: 20, ignoreEos: true });
    const soloB = await runTask(ctx, { tokens: other, nPredict: 20, ignoreEos: true });
    let maxActive = 0;
    const watch = setInterval(() => (maxActive = Math.max(maxActive, ctx.stats().activeSlots)), 1);
    const [a, b] = await Promise.all([
      runTask(ctx, { tokens: prompt, nPredict: 20, ignoreEos: true }),
      runTask(ctx, { tokens: other, nPredict: 20, ignoreEos: true }),
    ]);
    clearInterval(watch);
    assert.deepEqual(a.tokens, soloA.tokens);
    assert.deepEqual(b.tokens, soloB.tokens);
    assert.equal(a.done.reason, 'length');
    assert.equal(b.done.reason, 'length');
    assert.ok(maxActive <= 2);
  });

  it('two generating slots reuse the compute graph from step to step', async () => {
    const before = ctx.stats();
    const other = model.tokenize('The quick brown fox', true, false);
    await Promise.all([
      runTask(ctx, { tokens: prompt, nPredict: 24, ignoreEos: true }),
      runTask(ctx, { tokens: other, nPredict: 24, ignoreEos: true }),
    ]);
    const after = ctx.stats();
    const steps = after.decodeSteps - before.decodeSteps;
    const reused = after.graphsReused - before.graphsReused;
    assert.ok(steps >= 24, `${steps} decode steps`);
    // Both slots generate in lock-step for about 20 steps: only steps that change the batch's shape (a prompt joining,
    // a slot finishing) may rebuild the graph. A batch order that changes every step reuses none.
    assert.ok(reused >= steps - 8, `${reused} of ${steps} steps reused the graph`);
  });

  it('more tasks than slots wait in the FIFO queue and all complete', async () => {
    const tasks = [0, 1, 2, 3].map((i) =>
      // Long enough that no task can finish before the stats below are read.
      runTask(ctx, { tokens: prompt.subarray(0, 4 + i), nPredict: 48, ignoreEos: true }),
    );
    const stats = ctx.stats();
    assert.equal(stats.queuedTasks + stats.activeSlots, 4);
    assert.ok(stats.activeSlots <= 2);
    const results = await Promise.all(tasks);
    assert.ok(results.every((r) => r.done.reason === 'length' && r.tokens.length === 48));
    const ids = results.map((r) => r.taskId);
    assert.equal(new Set(ids).size, 4);
  });

  it('cancel() ends a task with reason cancelled quickly and frees its slot', async () => {
    const started = Date.now();
    const r = await runTask(ctx, { tokens: prompt, nPredict: -1, ignoreEos: true }, (event, taskId) => {
      if (event.type === 'token') ctx.cancel(taskId);
    });
    assert.equal(r.done.reason, 'cancelled');
    // The engine sees the flag at its next step; tokens decoded before that may still be queued for the JS thread
    // (a busy machine delays delivery), so allow a few, far below the slot's context that an uncancelled task fills.
    assert.ok(r.tokenEvents.length <= 20, `stopped after ${r.tokenEvents.length} tokens`);
    assert.ok(Date.now() - started < 5000);
    assert.equal(ctx.stats().activeSlots, 0);
    ctx.cancel(987654); // unknown ids are ignored
    const again = await runTask(ctx, { tokens: prompt, nPredict: 5, ignoreEos: true });
    assert.equal(again.done.reason, 'length');
    assert.equal(again.tokens.length, 5);
  });

  it('cancel() right after submit() ends the task and keeps the KV bookkeeping right', async () => {
    const long = Int32Array.from({ length: 240 }, (_, i) => 1000 + ((i * 37) % 5000));
    long[0] = 1;
    for (let attempt = 0; attempt < 3; attempt++) {
      let id = -1;
      const done = new Promise<string>((resolve) => {
        id = ctx.submit({ tokens: long, nPredict: -1, sampling: GREEDY, ignoreEos: true }, (event) => {
          if (event.type === 'done') resolve(event.reason);
        });
      });
      ctx.cancel(id);
      assert.equal(await done, 'cancelled');
    }
    // Whatever part of the prompt was evaluated before the cancel is reused now, and must give the same result as a
    // context that never saw this prompt.
    const reused = await runTask(ctx, { tokens: long, nPredict: 6, ignoreEos: true });
    const fresh = new binding.Context(model, { nCtx: 256, nThreads: 2 });
    try {
      const expected = await runTask(fresh, { tokens: long, nPredict: 6, ignoreEos: true });
      assert.equal(expected.done.timings.promptN, long.length);
      assert.deepEqual(reused.tokens, expected.tokens);
    } finally {
      await fresh.dispose();
    }
  });

  it('a stop string cuts the output before it and is not emitted', async () => {
    const full = await runTask(ctx, { tokens: prompt, nPredict: 40, ignoreEos: true });
    assert.ok(full.text.length > 20, JSON.stringify(full.text));
    const stop = full.text.slice(12, 16);
    const cut = full.text.indexOf(stop);
    const r = await runTask(ctx, { tokens: prompt, nPredict: 40, ignoreEos: true, stop: ['never-there', stop] });
    assert.equal(r.done.reason, 'stop');
    assert.equal(r.done.stopString, stop);
    assert.equal(r.text, full.text.slice(0, cut));
    assert.ok(!r.text.includes(stop));
    assert.deepEqual(r.tokens, full.tokens.slice(0, r.tokens.length));
  });

  it('text held back for a possible stop string is flushed when it is not one', async () => {
    const full = await runTask(ctx, { tokens: prompt, nPredict: 30, ignoreEos: true });
    // Stop strings that start with whole token pieces of the output: those steps hold their text back entirely.
    const pieces = full.tokenEvents.map((e) => e.text).filter((t) => t.trim() !== '');
    const stops = [pieces[2] + '\u0001', pieces[pieces.length - 1] + '\u0002'];
    const r = await runTask(ctx, { tokens: prompt, nPredict: 30, ignoreEos: true, stop: stops });
    assert.equal(r.done.reason, 'length');
    assert.equal(r.text, full.text);
    assert.ok(
      r.tokenEvents.some((e) => e.text === ''),
      'some step held its text back',
    );
  });

  it('reuses the KV prefix of the slot across tasks', async () => {
    const base = model.tokenize('In a small village far away there lived an old clockmaker', true, false);
    const first = await runTask(ctx, { tokens: base, nPredict: 4 });
    assert.equal(first.done.timings.promptTotal, base.length);
    const second = await runTask(ctx, { tokens: base, nPredict: 4 });
    assert.equal(second.done.timings.promptTotal, base.length);
    assert.ok(second.done.timings.promptN < second.done.timings.promptTotal, JSON.stringify(second.done.timings));
    assert.equal(second.done.timings.promptN, 1, 'only the last prompt token is evaluated again');
    assert.deepEqual(second.tokens, first.tokens, 'reused KV gives the same continuation');
    const extended = Int32Array.from([...base, ...model.tokenize(' who made clocks', false, false)]);
    const third = await runTask(ctx, { tokens: extended, nPredict: 4 });
    assert.ok(third.done.timings.promptN <= extended.length - base.length);
  });

  it('rejects bad tasks synchronously with coded errors', () => {
    const nCtxSlot = ctx.stats().nCtxSlot;
    const submit = (task: object) => () => ctx.submit(task as never, () => undefined);
    assertThrowsCode(
      submit({ tokens: new Int32Array(nCtxSlot + 1).fill(450), nPredict: 4, sampling: GREEDY }),
      'LLAMA_EXCEED_CONTEXT',
    );
    assertThrowsCode(submit({ tokens: new Int32Array(0), nPredict: 4, sampling: GREEDY }), 'LLAMA_INVALID_ARGUMENT');
    assertThrowsCode(
      submit({ tokens: Int32Array.from([1, 99999999]), nPredict: 4, sampling: GREEDY }),
      'LLAMA_INVALID_ARGUMENT',
    );
    assertThrowsCode(submit({ tokens: prompt, nPredict: 4 }), 'LLAMA_INVALID_ARGUMENT');
    assertThrowsCode(submit({ tokens: [1, 2], nPredict: 4, sampling: GREEDY }), 'LLAMA_INVALID_ARGUMENT');
    assertThrowsCode(
      submit({ tokens: prompt, nPredict: 4, sampling: { ...GREEDY, grammar: 'root ::= (' } }),
      'LLAMA_INVALID_ARGUMENT',
    );
    assertThrowsCode(
      () => ctx.submit({ tokens: prompt, nPredict: 4, sampling: GREEDY }, null as never),
      'LLAMA_INVALID_ARGUMENT',
    );
    const stats = ctx.stats();
    assert.equal(stats.activeSlots + stats.queuedTasks, 0);
  });
});

describe('generation on the tiny qwen2 (byte-level BPE, ChatML)', () => {
  let model: NativeModel;
  let ctx: NativeContext;

  before(async () => {
    model = await loadModel(TINY_QWEN2);
    ctx = new binding.Context(model, { nCtx: 1024, nParallel: 2, nThreads: 2 });
  });
  after(async () => {
    await ctx.dispose();
    await model.dispose();
  });

  it('every emitted text is well-formed and the concatenation is the detokenized tokens', async () => {
    const prompt = model.tokenize(model.applyChatTemplate([{ role: 'user', content: '你好, 🦙!' }]), true, true);
    // Hot sampling over a byte-level vocabulary produces many tokens that split UTF-8 characters.
    for (const seed of [1, 2, 3]) {
      const r = await runTask(ctx, { tokens: prompt, nPredict: 150, sampling: seeded(seed, 1.5), ignoreEos: true });
      assert.ok(r.tokenEvents.every((e) => typeof e.text === 'string' && isWellFormed(e.text)));
      assert.equal(r.text, model.detokenize(Int32Array.from(r.tokens)), `seed ${seed}`);
    }
  });

  it('a GBNF grammar constrains the output and ends with eog', async () => {
    const prompt = model.tokenize(model.applyChatTemplate([{ role: 'user', content: 'yes or no?' }]), true, true);
    const grammar = 'root ::= ("yes" | "no") "."';
    for (const seed of [7, 8]) {
      const r = await runTask(ctx, { tokens: prompt, nPredict: 20, sampling: { ...seeded(seed, 1.0), grammar } });
      assert.match(r.text, /^(yes|no)\.$/);
      assert.equal(r.done.reason, 'eog');
    }
  });
});
