import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { TokenizeService } from '../../src/generation/tokenize.service';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

interface TokenizeAnswer {
  model: string;
  tokens: number[];
  pieces?: string[];
}

// /api/tokenize, /api/detokenize (beyond Ollama) and llama-server's /tokenize, /detokenize with the REAL addon on
// tiny-qwen2 (BPE, no BOS) and tiny-llama-spm (SentencePiece, adds BOS).
describe('tokenize / detokenize with the real addon (beyond Ollama)', { skip: addon.skip }, () => {
  let t: TestApp;
  const post = async (path: string, body: unknown) => {
    const res = await postJson(`${t.baseUrl}${path}`, body);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const ps = async () => {
    const res = await fetch(`${t.baseUrl}/api/ps`);
    return ((await res.json()) as { models: { name: string }[] }).models.map((m) => m.name);
  };
  const unload = async (model: string) => {
    assert.equal((await post('/api/generate', { model, keep_alive: 0 })).status, 200);
    for (let i = 0; i < 100 && (await ps()).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  };

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    for (const [model, path] of [
      ['qwen', TINY_QWEN2],
      ['spm', TINY_LLAMA_SPM],
    ]) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile: `FROM ${path}`, stream: false });
      assert.equal(res.status, 200, model);
    }
  });

  after(() => t?.close());

  for (const model of ['qwen', 'spm']) {
    it(`${model}: not loaded → vocabulary-only (never in /api/ps); round-trips; pieces concatenate to the text`, async () => {
      assert.deepEqual(await ps(), []);
      const text = 'Hello world, the sky is blue.';
      const tok = await post('/api/tokenize', { model, content: text, with_pieces: true });
      assert.equal(tok.status, 200, JSON.stringify(tok.body));
      const answer = tok.body as unknown as TokenizeAnswer;
      assert.equal(answer.model, `${model}:latest`);
      assert.ok(answer.tokens.length > 3);
      assert.equal(answer.pieces?.length, answer.tokens.length);
      assert.deepEqual(await ps(), [], 'vocabulary-only: no runner loaded');
      // Without special tokens the text comes back exactly, and so does the concatenation of the pieces.
      const plain = (await post('/api/tokenize', { model, prompt: text, add_special: false, with_pieces: true }))
        .body as unknown as TokenizeAnswer;
      assert.ok(plain.tokens.length <= answer.tokens.length);
      const detok = await post('/api/detokenize', { model, tokens: plain.tokens });
      assert.equal(detok.status, 200);
      assert.equal((detok.body as { content: string }).content.trimStart(), text);
      assert.equal(plain.pieces?.join('').trimStart(), text);
      assert.deepEqual(await ps(), []);
    });

    it(`${model}: the count equals prompt_eval_count of a raw /api/generate of the same text (loaded runner)`, async () => {
      // A raw generate tokenizes the prompt as /api/tokenize does by default: add_special true (BOS/EOS exactly as
      // the vocabulary says — tiny-llama-spm adds BOS, tiny-qwen2 adds none) and special-token text parsed. So the
      // default tokenize (add_special omitted) is the like-for-like count. The text is new to the runner (no prompt
      // cache reuse can shrink prompt_eval_count).
      const text = `Counting tokens for ${model} <|im_start|> once.`;
      const gen = await post('/api/generate', {
        model,
        prompt: text,
        raw: true,
        stream: false,
        options: { num_predict: 1, temperature: 0 },
      });
      assert.equal(gen.status, 200, JSON.stringify(gen.body));
      assert.ok((await ps()).length === 1, 'loaded by generate');
      const tok = (await post('/api/tokenize', { model, content: text })).body as unknown as TokenizeAnswer;
      assert.equal(tok.tokens.length, gen.body.prompt_eval_count);
      const plain = (await post('/api/tokenize', { model, content: text, add_special: false }))
        .body as unknown as TokenizeAnswer;
      const bos = model === 'spm' ? 1 : 0;
      assert.equal(tok.tokens.length, plain.tokens.length + bos, 'add_special adds BOS only where the vocab says');
      await unload(model);
    });
  }

  it('special-token text becomes one token; its piece is the text', async () => {
    const res = (await post('/api/tokenize', { model: 'qwen', content: '<|im_start|>', with_pieces: true }))
      .body as unknown as TokenizeAnswer;
    assert.equal(res.tokens.length, 1);
    assert.deepEqual(res.pieces, ['<|im_start|>']);
    const back = await post('/api/detokenize', { model: 'qwen', tokens: res.tokens });
    assert.equal((back.body as { content: string }).content, '<|im_start|>');
  });

  it('llama-server shapes: no model → 400 unless exactly one model is loaded; then ids or {id, piece}', async () => {
    await unload('qwen');
    const none = await post('/tokenize', { content: 'hello' });
    assert.equal(none.status, 400);
    assert.match(String(none.body.error), /no model is loaded/);
    assert.equal((await post('/detokenize', { tokens: [1] })).status, 400);
    assert.equal((await post('/api/generate', { model: 'qwen' })).status, 200); // loads it
    const ids = await post('/tokenize', { content: 'hello world' });
    assert.equal(ids.status, 200, JSON.stringify(ids.body));
    const tokens = ids.body.tokens as number[];
    assert.ok(tokens.every((x) => Number.isInteger(x)));
    const withPieces = await post('/tokenize', { content: 'hello world', with_pieces: true });
    const objs = withPieces.body.tokens as { id: number; piece: string }[];
    assert.deepEqual(
      objs.map((o) => o.id),
      tokens,
    );
    assert.equal(objs.map((o) => o.piece).join(''), 'hello world');
    const text = await post('/detokenize', { tokens });
    assert.deepEqual(text.body, { content: 'hello world' });
    // parse_special false: the special-token text is plain text (several tokens).
    const asText = await post('/tokenize', { content: '<|im_start|>', parse_special: false });
    assert.ok((asText.body.tokens as number[]).length > 1);
    await unload('qwen');
  });

  it('a deleted model closes its vocabulary-only model; the cache holds at most 4', async () => {
    const service = t.app.get(TokenizeService);
    assert.equal((await postJson(`${t.baseUrl}/api/copy`, { source: 'qwen', destination: 'gone' })).status, 200);
    assert.equal((await post('/api/tokenize', { model: 'spm', content: 'x' })).status, 200);
    assert.equal((await post('/api/tokenize', { model: 'gone', content: 'x' })).status, 200);
    const before = service.cachedVocabularies();
    assert.ok(before >= 2 && before <= 4);
    const del = await fetch(`${t.baseUrl}/api/delete`, { method: 'DELETE', body: JSON.stringify({ model: 'gone' }) });
    assert.equal(del.status, 200);
    // 'gone' shared its weights with 'qwen': deleting the name still drops the cached vocabulary of those weights.
    assert.equal(service.cachedVocabularies(), before - 1);
    assert.equal((await post('/api/tokenize', { model: 'gone', content: 'x' })).status, 404);
    assert.equal((await post('/api/tokenize', { model: 'qwen', content: 'x' })).status, 200, 'reopened on demand');
  });

  it('404 for an unknown model; 400 for ids out of range or not ids', async () => {
    const missing = await post('/api/tokenize', { model: 'nope', content: 'x' });
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { error: "model 'nope' not found" });
    assert.equal((await post('/api/detokenize', { model: 'nope', tokens: [1] })).status, 404);
    assert.equal((await post('/api/tokenize', { content: 'x' })).status, 404);
    const range = await post('/api/detokenize', { model: 'qwen', tokens: [1, 10_000_000] });
    assert.equal(range.status, 400, JSON.stringify(range.body));
    assert.equal((await post('/api/detokenize', { model: 'qwen', tokens: [-1] })).status, 400);
    assert.equal((await post('/api/detokenize', { model: 'qwen', tokens: ['a'] })).status, 400);
    assert.equal((await post('/api/tokenize', { model: 'qwen', content: 5 })).status, 400);
    assert.deepEqual(await ps(), []);
  });
});
