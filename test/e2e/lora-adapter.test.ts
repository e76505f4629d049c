import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_LLAMA_SPM_LORA } from '../utils/models';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const GREEDY = { temperature: 0, seed: 42, num_predict: 12 };

// ADAPTER applied at inference (reference/ollama-api.md §3.9) with the REAL addon, through the official client: the
// adapter layer's blob is applied as a LoRA to the model's requests on the base weights' runner, so greedy output
// differs from the base model's (per-request forms: e2e/lora-per-request).
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
    // Both models run on one runner of the base weights (no reload): the adapter is applied to tiny-lora's requests
    // only (RunnerRequest.loras), so the base model's output is unchanged after it.
    assert.equal(baseAgain.response, base.response);
    const again = await ollama.generate({ model: 'tiny-lora', ...request });
    assert.equal(again.response, adapted.response);
  });

  it('show reports the ADAPTER in the Modelfile', async () => {
    const shown = await ollama.show({ model: 'tiny-lora' });
    assert.match(shown.modelfile, /^ADAPTER /m);
  });
});
