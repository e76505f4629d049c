// Tokenizer tests on vocab-only loads of llama.cpp's ggml-vocab-*.gguf files and their .inp/.out test vectors.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NativeModel } from '../../binding';
import { REPO_ROOT } from '../../src/config';
import { assertThrowsCode, binding, loadModel } from './native-helpers';

const VOCAB_DIR = join(REPO_ROOT, 'vendor', 'llama.cpp', 'models');

/** The (input, expected ids) pairs of a vocab file, parsed as tests/test-tokenizer-0.cpp does. */
function readVectors(name: string): { text: string; ids: number[] }[] {
  const inp = readFileSync(join(VOCAB_DIR, `${name}.inp`), 'utf8');
  const out = readFileSync(join(VOCAB_DIR, `${name}.out`), 'utf8').split('\n');
  const sep = '\n__ggml_vocab_test__\n';
  const texts = (inp.endsWith(sep) ? inp.slice(0, -sep.length) : inp).split(sep);
  if (out.at(-1) === '') out.pop();
  assert.equal(texts.length, out.length, 'as many inputs as outputs');
  return texts.map((text, i) => ({
    text,
    ids: out[i]
      .trim()
      .split(' ')
      .filter((s) => s !== '')
      .map(Number),
  }));
}

for (const name of ['ggml-vocab-llama-spm.gguf', 'ggml-vocab-qwen2.gguf']) {
  describe(`tokenizer ${name} (vocabOnly)`, () => {
    let model: NativeModel;
    before(async () => {
      model = await loadModel(join(VOCAB_DIR, name), { vocabOnly: true });
    });
    after(async () => {
      await model.dispose();
    });

    it('matches every llama.cpp test vector', () => {
      const vectors = readVectors(name);
      assert.ok(vectors.length > 20);
      for (const { text, ids } of vectors) {
        assert.deepEqual(Array.from(model.tokenize(text, false, false)), ids, JSON.stringify(text));
      }
    });

    it('round-trips text through tokenize/detokenize', () => {
      for (const text of ['Hello world', 'this is 🦙.cpp', 'нещо на Български', 'a\n\n\tb  c']) {
        const tokens = model.tokenize(text, false, false);
        assert.ok(tokens instanceof Int32Array);
        const back = model.detokenize(tokens);
        // SPM adds a leading space that detokenize removes again; BPE is exact.
        assert.equal(back, text);
      }
    });

    it('adds BOS only when asked and the vocab says so', () => {
      const info = model.info();
      const plain = model.tokenize('Hello', false, false);
      const special = model.tokenize('Hello', true, false);
      if (info.addBos) {
        assert.equal(special[0], info.bos);
        assert.equal(special.length, plain.length + 1);
      } else {
        assert.deepEqual(special, plain);
      }
    });

    it('reports vocabulary facts', () => {
      const info = model.info();
      assert.ok(info.nVocab > 30000);
      assert.equal(info.nLayer, 0, 'no layers in a vocab-only load');
      assert.equal(typeof info.bos, 'number');
      assert.match(model.metadata()['tokenizer.ggml.model'], /^(llama|gpt2)$/);
    });

    it('rejects out-of-range token ids and wrong argument types', () => {
      assertThrowsCode(() => model.detokenize(Int32Array.from([-1])), 'LLAMA_INVALID_ARGUMENT');
      assertThrowsCode(() => model.detokenize(Int32Array.from([10_000_000])), 'LLAMA_INVALID_ARGUMENT');
      assertThrowsCode(() => model.detokenize([1, 2] as unknown as Int32Array), 'LLAMA_INVALID_ARGUMENT');
      assertThrowsCode(() => model.tokenize(5 as unknown as string, false, false), 'LLAMA_INVALID_ARGUMENT');
    });

    it('cannot create a context on a vocab-only model', () => {
      assertThrowsCode(() => new binding.Context(model, { nCtx: 128 }), 'LLAMA_CONTEXT_CREATE_FAILED');
    });
  });
}
