// The audio projectors of scripts/test-model-audio.ts: the keys and tensors clip.cpp needs for a qwen2a audio encoder,
// alone and beside tiny-mmproj's vision encoder in one file (the native test test/native/audio.test.ts loads them).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readGguf, type GgufFile } from '../../../../src/models/gguf';
import { ensureTestModels, TINY_AUDIO_MMPROJ, TINY_MMPROJ, TINY_OMNI_MMPROJ } from '../../../utils/models';

ensureTestModels();

const shapeOf = (g: GgufFile, name: string): number[] | undefined => g.tensors.find((t) => t.name === name)?.shape;

describe('generated audio projectors', () => {
  it('tiny-audio-mmproj: clip "qwen2a", audio encoder only, Whisper tensors (no k bias), 128 wide out', async () => {
    const g = await readGguf(TINY_AUDIO_MMPROJ);
    assert.equal(g.metadata['general.architecture'], 'clip');
    assert.equal(g.metadata['clip.projector_type'], 'qwen2a');
    assert.equal(g.metadata['clip.has_audio_encoder'], true);
    assert.equal(g.metadata['clip.has_vision_encoder'], undefined);
    assert.equal(g.metadata['clip.audio.num_mel_bins'], 80);
    assert.equal(g.metadata['clip.audio.embedding_length'], 32);
    assert.equal(g.metadata['clip.audio.block_count'], 2);
    assert.equal(g.metadata['clip.audio.projection_dim'], 128);
    assert.deepEqual(shapeOf(g, 'a.conv1d.1.weight'), [3, 80, 32]);
    assert.deepEqual(shapeOf(g, 'a.conv1d.1.bias'), [1, 32]);
    assert.deepEqual(shapeOf(g, 'a.conv1d.2.weight'), [3, 32, 32]);
    assert.deepEqual(shapeOf(g, 'a.position_embd.weight'), [32, 1500]);
    assert.deepEqual(shapeOf(g, 'mm.a.fc.weight'), [32, 128]);
    for (let i = 0; i < 2; i++) {
      for (const t of ['attn_q.bias', 'attn_v.bias', 'attn_out.bias', 'ln1.bias', 'ln2.weight', 'ffn_down.bias']) {
        assert.ok(shapeOf(g, `a.blk.${i}.${t}`), `a.blk.${i}.${t}`);
      }
      assert.equal(shapeOf(g, `a.blk.${i}.attn_k.bias`), undefined, 'Whisper has no key bias');
    }
    assert.ok(!g.tensors.some((t) => t.name.startsWith('v.')), 'no vision tensors');
  });

  it('tiny-omni-mmproj: both encoders, per-modality projector types, tiny-mmproj shapes beside the audio ones', async () => {
    const g = await readGguf(TINY_OMNI_MMPROJ);
    const vision = await readGguf(TINY_MMPROJ);
    const audio = await readGguf(TINY_AUDIO_MMPROJ);
    assert.equal(
      g.metadata['clip.projector_type'],
      undefined,
      'no top-level type: clip.cpp reads the per-modality ones',
    );
    assert.equal(g.metadata['clip.vision.projector_type'], 'mlp');
    assert.equal(g.metadata['clip.audio.projector_type'], 'qwen2a');
    assert.equal(g.metadata['clip.has_vision_encoder'], true);
    assert.equal(g.metadata['clip.has_audio_encoder'], true);
    for (const [key, value] of Object.entries(vision.metadata)) {
      if (key.startsWith('clip.vision.')) assert.deepEqual(g.metadata[key], value, key);
    }
    for (const [key, value] of Object.entries(audio.metadata)) {
      if (key.startsWith('clip.audio.')) assert.deepEqual(g.metadata[key], value, key);
    }
    const names = (f: GgufFile): string[] => f.tensors.map((t) => t.name).sort();
    assert.deepEqual(names(g), [...names(vision), ...names(audio)].sort());
    for (const t of [...vision.tensors, ...audio.tensors]) assert.deepEqual(shapeOf(g, t.name), t.shape, t.name);
  });
});
