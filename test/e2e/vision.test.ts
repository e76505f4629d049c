import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_MMPROJ } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { testPng } from '../utils/png';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const GREEDY = { temperature: 0, seed: 42, num_predict: 6 };

// Images end to end (reference/ollama-api.md §3.2, §8.2, §10.2) with the REAL addon: a model made of tiny-llama-spm
// plus the random tiny-mmproj projector (4 image tokens per image), driven by the official `ollama` client.
describe('vision models with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;
  let ollama: Ollama;
  const png = testPng().toString('base64');

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    ollama = new Ollama({ host: t.baseUrl });
    const created = await ollama.create({
      model: 'tiny-vision',
      modelfile: `FROM ${TINY_LLAMA_SPM}\nFROM ${TINY_MMPROJ}\n`,
    } as Parameters<Ollama['create']>[0]);
    assert.equal(created.status, 'success');
    await ollama.create({ model: 'tiny-text', modelfile: `FROM ${TINY_LLAMA_SPM}\n` } as Parameters<
      Ollama['create']
    >[0]);
  });

  after(() => t?.close());

  it('show lists the vision capability (projector layer) only for the model with a projector', async () => {
    const shown = await ollama.show({ model: 'tiny-vision' });
    assert.ok(shown.capabilities.includes('vision'), shown.capabilities.join(','));
    const plain = await ollama.show({ model: 'tiny-text' });
    assert.ok(!plain.capabilities.includes('vision'));
  });

  it('generate with an image evaluates the image tokens', async () => {
    const text = await ollama.generate({ model: 'tiny-vision', prompt: 'What is in this picture?', options: GREEDY });
    const withImage = await ollama.generate({
      model: 'tiny-vision',
      prompt: 'What is in this picture?',
      images: [png],
      options: GREEDY,
    });
    assert.equal(withImage.done, true);
    assert.equal(withImage.eval_count, 6);
    assert.ok(
      withImage.prompt_eval_count > text.prompt_eval_count,
      `${withImage.prompt_eval_count} vs ${text.prompt_eval_count}`,
    );
  });

  it('chat with a per-message image', async () => {
    const res = await ollama.chat({
      model: 'tiny-vision',
      messages: [{ role: 'user', content: 'Describe [img] please', images: [png] }],
      options: GREEDY,
    });
    assert.equal(res.done, true);
    assert.equal(res.eval_count, 6);
    assert.ok(res.prompt_eval_count > 4);
  });

  it('undecodable image bytes are a 400; a model without projector keeps the capability error', async () => {
    const bad = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'tiny-vision',
      prompt: 'hi',
      images: [Buffer.from('not an image').toString('base64')],
      stream: false,
    });
    assert.equal(bad.status, 400, await bad.text());
    const plain = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'tiny-text',
      prompt: 'hi',
      images: [png],
      stream: false,
    });
    assert.ok(plain.status >= 400);
    assert.match(await plain.text(), /missing data required for image input/);
    // the runner still serves after the bad request
    const ok = await ollama.generate({ model: 'tiny-vision', prompt: 'hi', images: [png], options: GREEDY });
    assert.equal(ok.done, true);
  });
});
