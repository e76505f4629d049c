import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { SystemMemoryProbe } from '../../../src/scheduler/memory.estimator';
import { AUDIO_ENCODER_POSITIONS, encoderComputeBytes, projectorBytes } from '../../../src/scheduler/projector-memory';
import { spec } from '../../utils/fake-runner';
import { ensureTestModels, TINY_AUDIO_MMPROJ, TINY_LLAMA_SPM, TINY_MMPROJ, TINY_OMNI_MMPROJ } from '../../utils/models';

// tiny projectors (scripts/test-model-extras.ts, test-model-audio.ts): vision 32×32 px in 16 px patches, 32 wide,
// 2 heads; audio (qwen2a) 32 wide, 2 heads.
const VISION = encoderComputeBytes(4, 32, 2);
const AUDIO = encoderComputeBytes(AUDIO_ENCODER_POSITIONS, 32, 2);
const missing = [TINY_AUDIO_MMPROJ, TINY_OMNI_MMPROJ].some((p) => !existsSync(p));

describe('projector memory', { skip: missing ? 'audio projectors not generated' : undefined }, () => {
  it('counts the file plus the compute buffer of each encoder the projector carries', async () => {
    ensureTestModels();
    const size = async (p: string) => (await stat(p)).size;
    assert.equal(await projectorBytes(TINY_MMPROJ), (await size(TINY_MMPROJ)) + VISION);
    assert.equal(await projectorBytes(TINY_AUDIO_MMPROJ), (await size(TINY_AUDIO_MMPROJ)) + AUDIO);
    assert.equal(await projectorBytes(TINY_OMNI_MMPROJ), (await size(TINY_OMNI_MMPROJ)) + VISION + AUDIO);
    assert.equal(await projectorBytes('/nonexistent/mmproj.gguf'), 0);
    // a 1500-position audio encoder's attention scores dominate: 1500² × 2 heads × 4 bytes
    assert.ok(AUDIO > 1500 * 1500 * 2 * 4);
  });

  it("adds the projector to the runner's estimate", async () => {
    ensureTestModels();
    const probe = new SystemMemoryProbe();
    const base = { modelPath: TINY_LLAMA_SPM, numCtx: 2048, numParallel: 1 };
    const plain = await probe.estimate(spec(base));
    const audio = await probe.estimate(spec({ ...base, projectorPath: TINY_AUDIO_MMPROJ }));
    assert.equal(audio - plain, await projectorBytes(TINY_AUDIO_MMPROJ));
  });
});
