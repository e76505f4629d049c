// Audio through mtmd: contexts with an audio projector (tiny-audio-mmproj.gguf, qwen2a) or both encoders
// (tiny-omni-mmproj.gguf), tasks with `prompt` + audio files in `images` (mtmd's helper sniffs WAV / MP3 / FLAC and
// decodes them to 16 kHz mono). Clips are made at test time (test/utils/audio-fixtures.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeContext, NativeModel } from '../../binding';
import { missingAudioTools, speech, tone, wavSeconds, whisperChunks, type AudioFormat } from '../utils/audio-fixtures';
import { TINY_AUDIO_MMPROJ, TINY_LLAMA_SPM, TINY_MMPROJ, TINY_OMNI_MMPROJ, ensureTestModels } from '../utils/models';
import { testPng } from '../utils/png';
import { assertRejectsCode, binding, loadModel, runTask, type TaskResult } from './native-helpers';

ensureTestModels();

const MARKER = '<__media__>';
const EMPTY = new Int32Array(0);
/** Audio embeddings of one 30 s chunk of tiny-audio-mmproj: 3000 mel frames → 1500 positions → 2× average pool. */
const PER_CHUNK = 750;
const TEXT = '\nwhat is said?';
const SKIP = missingAudioTools();

describe('audio (mtmd qwen2a projector)', { skip: SKIP }, () => {
  let model: NativeModel;
  let ctx: NativeContext;
  const clips = new Map<string, Buffer>();

  before(async () => {
    model = await loadModel(TINY_LLAMA_SPM);
    // one slot of 4096: a 61 s clip is 3 chunks (2250 positions)
    ctx = new binding.Context(model, { nCtx: 4096, nParallel: 1, nThreads: 2, projectorPath: TINY_AUDIO_MMPROJ });
    for (const format of ['wav', 'mp3', 'flac'] as AudioFormat[]) {
      clips.set(format, await speech('the quick brown fox jumps over the lazy dog', format));
    }
    clips.set('other', await speech('seven green kites drift above a quiet harbour at dawn'));
    clips.set('long', await tone(61));
  });

  after(async () => {
    await ctx?.dispose();
    await model?.dispose();
  });

  const clip = (name: string): Uint8Array => {
    const bytes = clips.get(name);
    if (!bytes) throw new Error(`no clip ${name}`);
    return new Uint8Array(bytes);
  };
  // Each task gets its own cache scope: a media task may reuse a cached prefix (promptN < promptTotal), and a reused
  // prefix changes the last logits by float rounding; the counts below are of the whole prompt (promptTotal).
  let scope = 0;
  const ask = (audio: Uint8Array, nPredict = 4): Promise<TaskResult> =>
    runTask(ctx, {
      tokens: EMPTY,
      prompt: `${MARKER}${TEXT}`,
      images: [audio],
      nPredict,
      logprobs: 5,
      cacheScope: `audio-${scope++}`,
    });

  /** Text positions mtmd adds around one audio entry: BOS, `<|audio_bos|>`, `<|audio_eos|>`, then the prompt text. */
  const textPositions = (): number =>
    (model.info().addBos ? 1 : 0) +
    model.tokenize('<|audio_bos|>', false, true).length +
    model.tokenize('<|audio_eos|>', false, true).length +
    model.tokenize(TEXT, false, true).length;

  it('a WAV clip under 30 s is one chunk: 750 audio positions plus the text in promptN', async () => {
    const r = await ask(clip('wav'));
    assert.equal(r.done.reason, 'length');
    assert.equal(r.tokens.length, 4);
    assert.equal(whisperChunks(wavSeconds(clips.get('wav') ?? Buffer.alloc(0))), 1);
    assert.equal(r.done.timings.promptN, PER_CHUNK + textPositions(), JSON.stringify(r.done.timings));
    assert.equal(r.done.timings.promptN, r.done.timings.promptTotal);
    assert.ok(r.done.timings.promptNs > 0);
  });

  it('a 61 s clip is three chunks: 2250 audio positions', async () => {
    const r = await ask(clip('long'), 1);
    assert.equal(whisperChunks(wavSeconds(clips.get('long') ?? Buffer.alloc(0))), 3);
    assert.equal(r.done.timings.promptTotal, 3 * PER_CHUNK + textPositions(), JSON.stringify(r.done.timings));
  });

  it('the same clip gives the same greedy tokens and logprobs; a different clip gives different ones', async () => {
    const first = await ask(clip('wav'));
    const again = await ask(clip('wav'));
    const other = await ask(clip('other'));
    const distribution = (r: TaskResult): unknown => r.tokenEvents.map((e) => [e.token, e.logprob, e.topLogprobs]);
    assert.deepEqual(distribution(again), distribution(first));
    assert.notDeepEqual(distribution(other), distribution(first));
  });

  it('MP3 and FLAC files of the clip decode too, with the same positions as the WAV', async () => {
    const wav = await ask(clip('wav'));
    for (const format of ['mp3', 'flac']) {
      const r = await ask(clip(format));
      assert.equal(r.tokens.length, 4, format);
      assert.equal(r.done.timings.promptTotal, wav.done.timings.promptTotal, format);
    }
  });

  it('a text task runs on the context after the audio tasks', async () => {
    const r = await runTask(ctx, { tokens: model.tokenize('hello', true, true), nPredict: 3 });
    assert.equal(r.tokens.length, 3);
  });

  it('audio to a vision-only projector and an image to an audio-only projector are LLAMA_INVALID_ARGUMENT', async () => {
    const vision = new binding.Context(model, { nCtx: 2048, nThreads: 1, projectorPath: TINY_MMPROJ });
    try {
      await assertRejectsCode(
        runTask(vision, { tokens: EMPTY, prompt: `${MARKER}${TEXT}`, images: [clip('wav')], nPredict: 2 }),
        'LLAMA_INVALID_ARGUMENT',
      );
    } finally {
      await vision.dispose();
    }
    await assertRejectsCode(
      runTask(ctx, { tokens: EMPTY, prompt: `${MARKER}${TEXT}`, images: [new Uint8Array(testPng())], nPredict: 2 }),
      'LLAMA_INVALID_ARGUMENT',
    );
  });

  it('the omni projector (both encoders) takes an image and an audio clip in one task', async () => {
    const omni = new binding.Context(model, { nCtx: 2048, nThreads: 2, projectorPath: TINY_OMNI_MMPROJ });
    try {
      const audioOnly = await runTask(omni, {
        tokens: EMPTY,
        prompt: `${MARKER}${TEXT}`,
        images: [clip('wav')],
        nPredict: 2,
      });
      const both = await runTask(omni, {
        tokens: EMPTY,
        prompt: `${MARKER}${MARKER}${TEXT}`,
        images: [new Uint8Array(testPng()), clip('wav')],
        nPredict: 2,
      });
      assert.equal(both.tokens.length, 2);
      // tiny-mmproj's shape: (32 / 16)^2 = 4 image positions, no image begin/end text for the "mlp" projector
      const added = both.done.timings.promptTotal - audioOnly.done.timings.promptTotal;
      assert.equal(added, 4, JSON.stringify(both.done.timings));
      assert.equal(audioOnly.done.timings.promptTotal, PER_CHUNK + textPositions());
    } finally {
      await omni.dispose();
    }
  });
});
