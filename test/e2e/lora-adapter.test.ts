import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { ensureTestModels, MODELS_DIR, TINY_LLAMA_SPM } from '../utils/models';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const GREEDY = { temperature: 0, seed: 42, num_predict: 12 };
/** Rank-4 LoRA for tiny-llama-spm (scripts/make-test-models.ts TINY_LLAMA_SPM_LORA). */
const TINY_LLAMA_SPM_LORA = join(MODELS_DIR, 'tiny-llama-spm-lora.gguf');

// ADAPTER applied at inference (reference/ollama-api.md §3.9) with the REAL addon, through the official client: the
// adapter layer's blob is attached to the runner's context as a LoRA, so greedy output differs from the base model's.
describe('LoRA adapters with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;
  let ollama: Ollama;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    ollama = new Ollama({ host: t.baseUrl });
    const base = await ollama.create({ model: 'tiny-base', modelfile: `FROM ${TINY_LLAMA_SPM}\n` } as Parameters<
      Ollama['create']
    >[0]);
    assert.equal(base.status, 'success');
    const adapted = await ollama.create({
      model: 'tiny-lora',
      modelfile: `FROM ${TINY_LLAMA_SPM}\nADAPTER ${TINY_LLAMA_SPM_LORA}\n`,
    } as Parameters<Ollama['create']>[0]);
    assert.equal(adapted.status, 'success');
  });

  after(() => t?.close());

  it('generate with the adapter model differs from the base model (greedy, same prompt and options)', async () => {
    const request = { prompt: 'Once upon a time', raw: true, options: GREEDY };
    const base = await ollama.generate({ model: 'tiny-base', ...request });
    const adapted = await ollama.generate({ model: 'tiny-lora', ...request });
    const baseAgain = await ollama.generate({ model: 'tiny-base', ...request });
    assert.equal(base.eval_count, 12);
    assert.equal(adapted.eval_count, 12);
    assert.notEqual(adapted.response, base.response);
    // Switching back reloads the runner without the adapter (the scheduler compares adapterPaths).
    assert.equal(baseAgain.response, base.response);
    const again = await ollama.generate({ model: 'tiny-lora', ...request });
    assert.equal(again.response, adapted.response);
  });

  it('show reports the ADAPTER in the Modelfile', async () => {
    const shown = await ollama.show({ model: 'tiny-lora' });
    assert.match(shown.modelfile, /^ADAPTER /m);
  });
});
