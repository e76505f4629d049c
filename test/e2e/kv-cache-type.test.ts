import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { kvCacheSettings, loadConfig } from '../../src/config';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { createModel, postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const OPTIONS = { temperature: 0, seed: 1, num_predict: 8, num_ctx: 4096 };

interface PsModel {
  name: string;
  size: number;
}

// OLLAMA_KV_CACHE_TYPE / OLLAMA_FLASH_ATTENTION end to end with the REAL addon: a q8_0 KV cache (with flash attention
// on) generates and makes the runner smaller in /api/ps than the default f16 cache; switching reloads the model.
describe('KV cache type and flash attention with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;
  let defaultSize = 0;

  const generate = async () => {
    const res = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'tiny',
      prompt: 'Why is the sky blue?',
      stream: false,
      options: OPTIONS,
    });
    const body = (await res.json()) as { response?: string; eval_count?: number; error?: string };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.eval_count, OPTIONS.num_predict);
  };
  const ps = async (): Promise<PsModel[]> => {
    const res = await fetch(`${t.baseUrl}/api/ps`);
    return ((await res.json()) as { models: PsModel[] }).models;
  };

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1 } });
    await createModel(t.baseUrl, 'tiny', `FROM ${TINY_QWEN2}`);
  });

  after(() => t?.close());

  it('q8_0 with flash attention on generates and reports a smaller size than f16; the change reloads', async () => {
    await generate();
    const auto = await ps();
    assert.equal(auto.length, 1);
    defaultSize = auto[0].size;

    // f16 and q8_0 both with flash attention on, so that only the KV cache differs (unset, the addon resolves it per
    // model on the CPU, and without it the attention scores take compute buffer).
    const on = loadConfig({ OLLAMA_FLASH_ATTENTION: '1' });
    Object.assign(t.config, { flashAttention: on.flashAttention, kvCacheType: on.kvCacheType });
    await generate();
    const f16 = await ps();
    assert.equal(f16.length, 1, 'one runner: the default one was replaced');

    const env = loadConfig({ OLLAMA_KV_CACHE_TYPE: 'q8_0', OLLAMA_FLASH_ATTENTION: '1' });
    assert.deepEqual(kvCacheSettings(env), { flashAttention: 'on', kvCacheType: 'q8_0' });
    Object.assign(t.config, { flashAttention: env.flashAttention, kvCacheType: env.kvCacheType });
    await generate();
    const q8 = await ps();
    assert.equal(q8.length, 1, 'one runner: the f16 one was replaced');
    // KV of 4096 cells: q8_0 is 34/64 of f16's bytes, so the whole runner shrinks by about half its KV cache.
    assert.ok(q8[0].size < f16[0].size, `q8_0 ${q8[0].size} < f16 ${f16[0].size}`);
  });

  it('a quantized type without flash attention on falls back to f16 (the same load as the default)', async () => {
    const env = loadConfig({ OLLAMA_KV_CACHE_TYPE: 'q4_0' });
    Object.assign(t.config, { flashAttention: env.flashAttention, kvCacheType: env.kvCacheType });
    assert.equal(kvCacheSettings(t.config).kvCacheType, 'f16');
    await generate();
    const again = await ps();
    assert.equal(again.length, 1);
    assert.equal(again[0].size, defaultSize);
  });
});
