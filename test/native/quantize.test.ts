// quantize(): a tiny F16 model to Q8_0, then load and run the result.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { TINY_LLAMA_SPM, ensureTestModels } from '../utils/models';
import { assertRejectsCode, assertThrowsCode, binding, loadModel, runTask } from './native-helpers';

ensureTestModels();

describe('quantize', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llamad-quantize-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a Q8_0 model that loads and generates', async () => {
    const out = join(dir, 'tiny-q8_0.gguf');
    await binding.quantize(TINY_LLAMA_SPM, out, { type: 'Q8_0', nThreads: 2 });
    assert.ok(statSync(out).size < statSync(TINY_LLAMA_SPM).size);
    const model = await loadModel(out);
    assert.match(model.info().description, /Q8_0/);
    assert.equal(model.metadata()['general.file_type'], '7');
    const ctx = new binding.Context(model, { nCtx: 256, nThreads: 2 });
    const r = await runTask(ctx, {
      tokens: model.tokenize('Once upon a time', true, false),
      nPredict: 5,
      ignoreEos: true,
    });
    assert.equal(r.tokens.length, 5);
    await model.dispose();
  });

  it('rejects a bad input with LLAMA_QUANTIZE_FAILED and a bad type with LLAMA_INVALID_ARGUMENT', async () => {
    await assertRejectsCode(
      binding.quantize('/nonexistent.gguf', join(dir, 'x.gguf'), { type: 'Q4_0' }),
      'LLAMA_QUANTIZE_FAILED',
    );
    assertThrowsCode(
      () => binding.quantize(TINY_LLAMA_SPM, join(dir, 'y.gguf'), { type: 'Q9' as never }),
      'LLAMA_INVALID_ARGUMENT',
    );
  });
});
