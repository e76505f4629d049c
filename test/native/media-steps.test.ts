// Media prompts in the engine: audio files decoded with a bound and clear errors (PrepareMedia), and a long media
// prompt evaluated one unit per engine step, so that another slot's stream goes on meanwhile (EvalMediaUnit).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeEvent, NativeModel, NativeTaskParams } from '../../binding';
import { MODELS_DIR, TINY_LLAMA_SPM, TINY_MMPROJ, ensureTestModels } from '../utils/models';
import { testPng } from '../utils/png';
import { onPath } from '../utils/programs';
import { GREEDY, assertThrowsCode, binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

// Made by scripts/make-test-models (qwen2a: Whisper encoder, 16 kHz, 750 embeddings per 30 s chunk).
const AUDIO_MMPROJ = join(MODELS_DIR, 'tiny-audio-mmproj.gguf');
// Both encoders in one projector (tiny-mmproj's vision shape and tiny-audio-mmproj's audio shape).
const OMNI_MMPROJ = join(MODELS_DIR, 'tiny-omni-mmproj.gguf');
const NO_AUDIO_MODEL = existsSync(AUDIO_MMPROJ)
  ? undefined
  : `${AUDIO_MMPROJ} is missing: run "npm run make-test-models" (it makes tiny-audio-mmproj.gguf)`;

const MARKER = '<__media__>';
const EMPTY = new Int32Array(0);
const RATE = 16000;

/** A 16 kHz mono 16-bit PCM WAV file of `seconds` of a 440 Hz tone at half scale (RIFF header + samples). */
function wav(seconds: number, hz = 440): Uint8Array {
  const n = Math.round(seconds * RATE);
  const out = Buffer.alloc(44 + n * 2);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + n * 2, 4);
  out.write('WAVE', 8, 'ascii');
  out.write('fmt ', 12, 'ascii');
  out.writeUInt32LE(16, 16); // fmt chunk size
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(RATE, 24);
  out.writeUInt32LE(RATE * 2, 28); // bytes per second
  out.writeUInt16LE(2, 32); // block align
  out.writeUInt16LE(16, 34); // bits per sample
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(n * 2, 40);
  for (let i = 0; i < n; i++) out.writeInt16LE(Math.round(16383 * Math.sin((2 * Math.PI * hz * i) / RATE)), 44 + i * 2);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** `file` (a WAV) converted by sox to `format` (its own temporary directory, removed afterwards). */
function soxConvert(file: Uint8Array, format: 'flac' | 'mp3'): Uint8Array {
  const dir = mkdtempSync(join(tmpdir(), 'llamad-media-steps-'));
  try {
    writeFileSync(join(dir, 'in.wav'), file);
    execFileSync('sox', [join(dir, 'in.wav'), join(dir, `out.${format}`)]);
    return new Uint8Array(readFileSync(join(dir, `out.${format}`)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The `error` event's message of a task expected to fail in preparation (rejects when it completes). */
async function errorOf(
  ctx: NativeContext,
  task: Partial<NativeTaskParams>,
): Promise<{ code: string; message: string }> {
  try {
    await runTask(ctx, { tokens: EMPTY, nPredict: 2, ...task });
  } catch (err) {
    return { code: (err as { code: string }).code, message: (err as Error).message };
  }
  assert.fail('the task completed');
}

describe('audio files in media tasks', { skip: NO_AUDIO_MODEL }, () => {
  let model: NativeModel;
  let ctx: NativeContext;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: 3200, nParallel: 2, nThreads: 2, projectorPath: AUDIO_MMPROJ });
  });

  after(async () => {
    await ctx?.dispose();
    await model?.dispose();
  });

  it('a clip under 30 s is one chunk of 750 positions, 30 to 60 s two; the same clip gives the same tokens', async () => {
    const prompt = `${MARKER}transcribe:`;
    const short = await runTask(ctx, { tokens: EMPTY, prompt, images: [wav(2)], nPredict: 6 });
    assert.equal(short.done.timings.promptN, short.done.timings.promptTotal);
    assert.ok(short.done.timings.promptTotal > 750, JSON.stringify(short.done.timings));
    assert.equal(short.tokens.length, 6);
    const long = await runTask(ctx, { tokens: EMPTY, prompt, images: [wav(40)], nPredict: 1 });
    assert.equal(long.done.timings.promptTotal - short.done.timings.promptTotal, 750);
    const again = await runTask(ctx, { tokens: EMPTY, prompt, images: [wav(2)], nPredict: 6 });
    assert.deepEqual(again.tokens, short.tokens);
  });

  it(
    'FLAC and MP3 (sox) decode like the WAV they were made from',
    { skip: !onPath('sox') && 'sox is not installed: run "apt-get install -y sox libsox-fmt-mp3"' },
    async () => {
      const prompt = `${MARKER}transcribe:`;
      const expected = (await runTask(ctx, { tokens: EMPTY, prompt, images: [wav(2)], nPredict: 1 })).done.timings;
      for (const format of ['flac', 'mp3'] as const) {
        const file = soxConvert(wav(2), format);
        const done = (await runTask(ctx, { tokens: EMPTY, prompt, images: [file], nPredict: 1, cacheScope: format }))
          .done;
        assert.equal(done.timings.promptTotal, expected.promptTotal, format);
      }
    },
  );

  it('a clip longer than maxAudioSeconds is refused with its length and the bound', async () => {
    const error = await errorOf(ctx, { prompt: `${MARKER} hi`, images: [wav(3.3)], maxAudioSeconds: 2 });
    assert.deepEqual(error, {
      code: 'LLAMA_INVALID_ARGUMENT',
      message: 'audio is 3.3 s long; the limit is 2 s (LLAMAD_MAX_AUDIO_SECONDS)',
    });
    // within the bound (absent = no bound: the other tests)
    const ok = await runTask(ctx, { tokens: EMPTY, prompt: `${MARKER} hi`, images: [wav(3.3)], maxAudioSeconds: 4 });
    assert.equal(ok.done.reason, 'length');
    assertThrowsCode(
      () =>
        ctx.submit(
          { tokens: EMPTY, prompt: MARKER, images: [wav(1)], maxAudioSeconds: -1, nPredict: 1, sampling: GREEDY },
          () => {},
        ),
      'LLAMA_INVALID_ARGUMENT',
    );
  });

  it('a corrupt file and a file without samples have their own messages', async () => {
    // a RIFF/WAVE header followed by no chunk at all
    const corrupt = Buffer.concat([Buffer.from(wav(0).subarray(0, 12)), Buffer.alloc(100)]);
    assert.deepEqual(await errorOf(ctx, { prompt: `${MARKER} ${MARKER} hi`, images: [wav(1), corrupt] }), {
      code: 'LLAMA_INVALID_ARGUMENT',
      message: 'images[1] is not a decodable audio file (WAV, MP3 or FLAC)',
    });
    assert.deepEqual(await errorOf(ctx, { prompt: `${MARKER} hi`, images: [wav(0)] }), {
      code: 'LLAMA_INVALID_ARGUMENT',
      message: 'audio file is empty',
    });
  });

  it('an image to an audio-only projector is refused, and audio to a vision-only one', async () => {
    const vision = new binding.Context(model, { nCtx: 256, nThreads: 1, projectorPath: TINY_MMPROJ });
    try {
      assert.deepEqual([vision.stats().projectorVision, vision.stats().projectorAudio], [true, false]);
      assert.deepEqual([ctx.stats().projectorVision, ctx.stats().projectorAudio], [false, true]);
      assert.deepEqual(await errorOf(vision, { prompt: `${MARKER} hi`, images: [wav(1)] }), {
        code: 'LLAMA_INVALID_ARGUMENT',
        message: 'this model is missing data required for audio input',
      });
    } finally {
      await vision.dispose();
    }
    assert.deepEqual(await errorOf(ctx, { prompt: `${MARKER} hi`, images: [new Uint8Array(testPng())] }), {
      code: 'LLAMA_INVALID_ARGUMENT',
      message: 'this model is missing data required for image input',
    });
  });

  it(
    'an image and a clip in one prompt, on a projector with both encoders',
    { skip: !existsSync(OMNI_MMPROJ) && `${OMNI_MMPROJ} is missing` },
    async () => {
      const omni = new binding.Context(model, { nCtx: 1024, nThreads: 1, projectorPath: OMNI_MMPROJ });
      try {
        assert.deepEqual([omni.stats().projectorVision, omni.stats().projectorAudio], [true, true]);
        const prompt = `${MARKER} and ${MARKER} describe both`;
        const both = await runTask(omni, {
          tokens: EMPTY,
          prompt,
          images: [new Uint8Array(testPng()), wav(1)],
          nPredict: 2,
        });
        const imageOnly = await runTask(omni, {
          tokens: EMPTY,
          prompt: `${MARKER} describe`,
          images: [new Uint8Array(testPng())],
          nPredict: 2,
        });
        assert.ok(
          both.done.timings.promptTotal > imageOnly.done.timings.promptTotal + 750,
          JSON.stringify(both.done.timings),
        );
        assert.equal(both.tokens.length, 2);
      } finally {
        await omni.dispose();
      }
    },
  );

  it('audio on a context without projector throws at submit, worded for audio', async () => {
    const plain = new binding.Context(model, { nCtx: 64, nThreads: 1 });
    try {
      assert.deepEqual([plain.stats().projectorVision, plain.stats().projectorAudio], [false, false]);
      const submit = (file: Uint8Array) => () =>
        plain.submit(
          { tokens: EMPTY, prompt: `${MARKER} hi`, images: [file], nPredict: 1, sampling: GREEDY },
          () => {},
        );
      assert.throws(submit(wav(1)), {
        code: 'LLAMA_INVALID_ARGUMENT',
        message: /: this model is missing data required for audio input$/,
      });
      assert.throws(submit(new Uint8Array(testPng())), {
        code: 'LLAMA_INVALID_ARGUMENT',
        message: /: images need a context created with a projector \(params\.projectorPath\)$/,
      });
    } finally {
      await plain.dispose();
    }
  });
});

describe('prefix reuse of media prompts', { skip: NO_AUDIO_MODEL }, () => {
  let model: NativeModel;
  let ctx: NativeContext;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, { nCtx: 2048, nParallel: 1, nThreads: 2, projectorPath: AUDIO_MMPROJ });
  });

  after(async () => {
    await ctx?.dispose();
    await model?.dispose();
  });

  const timingsOf = async (prompt: string, file: Uint8Array, cacheScope?: string) =>
    (await runTask(ctx, { tokens: EMPTY, prompt, images: [file], nPredict: 2, cacheScope })).done.timings;

  it('the same clip at the same place is not evaluated again; another clip or scope is', async () => {
    const first = await timingsOf(`${MARKER}transcribe:`, wav(2));
    assert.equal(first.promptN, first.promptTotal);
    // the same prompt: only its last token, for its logits
    assert.equal((await timingsOf(`${MARKER}transcribe:`, wav(2))).promptN, 1);
    // the same clip, other text after it: the clip and the text before it are kept
    const otherText = await timingsOf(`${MARKER}summarize it:`, wav(2));
    assert.ok(otherText.promptN < otherText.promptTotal - 750, JSON.stringify(otherText));
    // another clip (same length, same prompt text): at most the text before it is kept
    const otherClip = await timingsOf(`${MARKER}summarize it:`, wav(2, 880));
    assert.equal(otherClip.promptTotal, otherText.promptTotal);
    assert.ok(otherClip.promptN > 750, JSON.stringify(otherClip));
    // another cache scope never reuses any of it
    const scoped = await timingsOf(`${MARKER}summarize it:`, wav(2, 880), 'another scope');
    assert.equal(scoped.promptN, scoped.promptTotal);
  });

  it('a text prompt after a media prompt reuses the text before the clip only', async () => {
    await timingsOf(`hello ${MARKER}transcribe:`, wav(2));
    const text = model.tokenize('hello there, how are you', true, true);
    const done = (await runTask(ctx, { tokens: text, nPredict: 1 })).done.timings;
    assert.ok(done.promptN < done.promptTotal, JSON.stringify(done));
  });
});

describe('a long media prompt does not hold other slots up', { skip: NO_AUDIO_MODEL }, () => {
  let model: NativeModel;
  let ctx: NativeContext;
  // 61 s = 3 Whisper chunks = 2250 embeddings; with nBatch 64 about 40 engine steps (3 encodes, 36 decodes).
  const LONG_SECONDS = 61;

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    ctx = new binding.Context(model, {
      nCtx: 2 * 2400,
      nParallel: 2,
      nBatch: 64,
      nUbatch: 64,
      nThreads: 2,
      projectorPath: AUDIO_MMPROJ,
    });
  });

  after(async () => {
    await ctx?.dispose();
    await model?.dispose();
  });

  /**
   * Submits the long audio task, then a short text task through the media path (`images: []`: prepared on the media
   * thread after the audio task, so it reaches a slot only once the audio task is in one). Returns both tasks' events
   * in the order they arrived.
   */
  function race(
    hz: number,
    onShortToken: (longId: number) => void,
  ): Promise<{ order: NativeEvent[]; longId: number; shortId: number }> {
    return new Promise((resolve, reject) => {
      const order: NativeEvent[] = [];
      let ended = 0;
      const onEvent = (event: NativeEvent) => {
        order.push(event);
        if (event.type === 'token' && event.taskId === shortId) onShortToken(longId);
        if (event.type === 'error') reject(new Error(event.message));
        if (event.type === 'done' || event.type === 'error') {
          if (++ended === 2) resolve({ order, longId, shortId });
        }
      };
      const longId = ctx.submit(
        {
          tokens: EMPTY,
          prompt: `${MARKER}summarize:`,
          images: [wav(LONG_SECONDS, hz)],
          nPredict: 4,
          sampling: GREEDY,
        },
        onEvent,
      );
      const shortId = ctx.submit(
        { tokens: EMPTY, prompt: 'hello there', images: [], nPredict: 8, sampling: GREEDY },
        onEvent,
      );
    });
  }

  it('another slot streams all its tokens while a 61 s clip is evaluated', async () => {
    const { order, longId, shortId } = await race(440, () => {});
    const index = (pred: (e: NativeEvent) => boolean) => order.findIndex(pred);
    const shortDone = index((e) => e.taskId === shortId && e.type === 'done');
    const longFirst = index((e) => e.taskId === longId && e.type === 'token');
    const longDone = order.find((e) => e.taskId === longId && e.type === 'done');
    assert.equal(order.filter((e) => e.taskId === shortId && e.type === 'token').length, 8);
    assert.ok(longFirst > shortDone, 'the short task finished before the long prompt gave its first token');
    assert.equal(longDone?.type === 'done' && longDone.timings.promptTotal >= 3 * 750, true, JSON.stringify(longDone));
    assert.equal(order.filter((e) => e.taskId === longId && e.type === 'token').length, 4);
  });

  it('a media prompt is cancelled between its units', async () => {
    let cancelled = false;
    // another clip: the first test's is in a slot's cache now (prefix reuse)
    const { order, longId } = await race(660, (id) => {
      if (!cancelled) ctx.cancel(id);
      cancelled = true;
    });
    const longEvents = order.filter((e) => e.taskId === longId);
    assert.equal(longEvents.length, 1, 'no token before the cancel');
    assert.equal(longEvents[0].type === 'done' && longEvents[0].reason, 'cancelled');
    // the context is usable afterwards
    const ok = await runTask(ctx, { tokens: EMPTY, prompt: `${MARKER} go`, images: [wav(1)], nPredict: 2 });
    assert.equal(ok.tokens.length, 2);
  });
});
