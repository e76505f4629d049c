import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deriveCapabilities, projectorModalities } from '../../../src/models';
import type { ModelFacts } from '../../../src/models';

const facts = { architecture: 'llama' } as ModelFacts;

describe('projector modalities', () => {
  it('reads clip.has_vision_encoder / clip.has_audio_encoder as clip.cpp does (absent = false)', () => {
    assert.deepEqual(projectorModalities({ 'clip.has_vision_encoder': true }), { vision: true, audio: false });
    assert.deepEqual(projectorModalities({ 'clip.has_audio_encoder': true }), { vision: false, audio: true });
    assert.deepEqual(projectorModalities({ 'clip.has_vision_encoder': true, 'clip.has_audio_encoder': true }), {
      vision: true,
      audio: true,
    });
    assert.deepEqual(projectorModalities({ 'clip.has_vision_encoder': false, 'clip.has_audio_encoder': true }), {
      vision: false,
      audio: true,
    });
  });

  it('treats a legacy projector without the has_* keys as vision', () => {
    assert.deepEqual(projectorModalities({ 'clip.vision.image_size': 336 }), { vision: true, audio: false });
  });

  it('gives vision and/or audio capabilities after completion, before the template ones', () => {
    assert.deepEqual(deriveCapabilities(facts, undefined, undefined), ['completion']);
    assert.deepEqual(deriveCapabilities(facts, undefined, { vision: false, audio: true }), ['completion', 'audio']);
    assert.deepEqual(deriveCapabilities(facts, undefined, { vision: true, audio: true }), [
      'completion',
      'vision',
      'audio',
    ]);
    assert.deepEqual(deriveCapabilities({ ...facts, vision: true }, undefined, undefined), ['completion', 'vision']);
  });
});
