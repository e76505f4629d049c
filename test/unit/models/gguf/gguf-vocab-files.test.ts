import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GgufValueType, isGgufFile, modelDetails, readGguf } from '../../../../src/models/gguf';
import { REPO_ROOT } from '../../../../src/config';

const VOCABS = join(REPO_ROOT, 'vendor', 'llama.cpp', 'models');

describe('readGguf on llama.cpp vocabulary files', () => {
  it('reads the SPM llama vocabulary', async () => {
    const path = join(VOCABS, 'ggml-vocab-llama-spm.gguf');
    assert.equal(await isGgufFile(path), true);
    const g = await readGguf(path);
    assert.equal(g.version, 3);
    assert.equal(g.tensors.length, 0);
    assert.equal(g.metadata['general.architecture'], 'llama');
    assert.equal(g.metadata['tokenizer.ggml.model'], 'llama');
    const tokens = g.metadata['tokenizer.ggml.tokens'] as string[];
    assert.equal(tokens.length, 32000);
    assert.deepEqual(tokens.slice(0, 3), ['<unk>', '<s>', '</s>']);
    assert.deepEqual(g.types['tokenizer.ggml.tokens'], { type: GgufValueType.ARRAY, itemType: GgufValueType.STRING });
    assert.deepEqual(g.types['tokenizer.ggml.scores'], { type: GgufValueType.ARRAY, itemType: GgufValueType.FLOAT32 });
    assert.equal((g.metadata['tokenizer.ggml.scores'] as number[]).length, 32000);
    assert.equal(g.metadata['tokenizer.ggml.bos_token_id'], 1);
    assert.equal(g.metadata['tokenizer.ggml.add_bos_token'], true);
    assert.equal(g.metadata['llama.context_length'], 4096);
    const d = modelDetails(g);
    assert.equal(d.architecture, 'llama');
    assert.equal(d.fileType, 'F16');
    assert.equal(d.contextLength, 4096);
    assert.equal(d.embeddingLength, 4096);
    assert.equal(d.parameterCount, 0);
  });

  it('reads the qwen2 BPE vocabulary with merges and a ChatML template', async () => {
    const g = await readGguf(join(VOCABS, 'ggml-vocab-qwen2.gguf'));
    assert.equal(g.metadata['tokenizer.ggml.model'], 'gpt2');
    assert.equal(g.metadata['tokenizer.ggml.pre'], 'qwen2');
    const tokens = g.metadata['tokenizer.ggml.tokens'] as string[];
    assert.equal(tokens.length, 151936);
    assert.equal((g.metadata['tokenizer.ggml.merges'] as string[]).length, 151387);
    assert.ok(tokens.includes('<|im_end|>'));
    assert.match(g.metadata['tokenizer.chat_template'] as string, /<\|im_start\|>/);
    assert.match(modelDetails(g).chatTemplate ?? '', /<\|im_start\|>/);
  });

  it('reads the WPM bert vocabulary', async () => {
    const g = await readGguf(join(VOCABS, 'ggml-vocab-bert-bge.gguf'));
    assert.equal(g.metadata['tokenizer.ggml.model'], 'bert');
    assert.equal((g.metadata['tokenizer.ggml.tokens'] as string[]).length, 30522);
    assert.equal(g.metadata['tokenizer.ggml.token_type_count'], 2);
    assert.equal(g.metadata['bert.attention.causal'], false);
    assert.equal(g.types['bert.attention.causal'].type, GgufValueType.BOOL);
  });
});
