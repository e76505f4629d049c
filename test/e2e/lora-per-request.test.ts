import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  ensureTestModels,
  TINY_LLAMA_SPM,
  TINY_LLAMA_SPM_LORA,
  TINY_LLAMA_SPM_LORA2,
  TINY_QWEN2,
} from '../utils/models';
import { checkPickerMetrics } from '../utils/picker-metrics';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const GREEDY = { temperature: 0, seed: 42, num_predict: 12 };
const PROMPT = 'Once upon a time';

/** A parsed JSON body, read loosely (the assertions check its shape). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** POSTs JSON; resolves with the status and the parsed body. */
async function post(base: string, path: string, body: unknown): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

// Adapters per request (issue 34 item 3, beyond Ollama) with the REAL addon: `FROM base` + `ADAPTER x` models run on
// the base weights' runner with their adapter applied per sequence, and llama-server's per-request `lora` list
// (`{id|name, scale}`) replaces a model's adapters on the native and OpenAI routes.
describe('LoRA adapters per request with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;
  /** Greedy /api/generate text of each model alone. */
  const alone: Record<string, string> = {};

  const generate = async (model: string, extra: Record<string, unknown> = {}): Promise<string> => {
    const r = await post(t.baseUrl, '/api/generate', {
      model,
      prompt: PROMPT,
      raw: true,
      stream: false,
      options: GREEDY,
      ...extra,
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.eval_count, GREEDY.num_predict);
    return r.json.response as string;
  };

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { contextLength: 512 } });
    const create = async (model: string, modelfile: string) => {
      const r = await post(t.baseUrl, '/api/create', { model, modelfile, stream: false });
      assert.equal(r.status, 200, JSON.stringify(r.json));
    };
    await create('tiny-base', `FROM ${TINY_LLAMA_SPM}\n`);
    await create('ft1', `FROM tiny-base\nADAPTER ${TINY_LLAMA_SPM_LORA}\n`);
    await create('ft2', `FROM tiny-base\nADAPTER ${TINY_LLAMA_SPM_LORA2}\n`);
    await create('qwen', `FROM ${TINY_QWEN2}\n`);
  });

  after(() => t?.close());

  it('each model alone: the adapters change greedy output, each its own way', async () => {
    for (const model of ['tiny-base', 'ft1', 'ft2']) alone[model] = await generate(model);
    assert.notEqual(alone.ft1, alone['tiny-base']);
    assert.notEqual(alone.ft2, alone['tiny-base']);
    assert.notEqual(alone.ft1, alone.ft2);
    // Deterministic on the shared runner, whatever ran before.
    assert.equal(await generate('tiny-base'), alone['tiny-base']);
    assert.equal(await generate('ft1'), alone.ft1);
  });

  it('two adapters of one base concurrently give the same text as alone', async () => {
    const [a, b, c, d] = await Promise.all([generate('ft1'), generate('ft2'), generate('tiny-base'), generate('ft1')]);
    assert.equal(a, alone.ft1);
    assert.equal(b, alone.ft2);
    assert.equal(c, alone['tiny-base']);
    assert.equal(d, alone.ft1);
  });

  it('/api/ps shows one runner for the three models, named after the base model', async () => {
    const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as { models: { name: string }[] };
    assert.deepEqual(
      ps.models.map((m) => m.name),
      ['tiny-base:latest'],
    );
  });

  it('the model-server metrics show the resident adapters under the base model’s runner', async () => {
    const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
    const samples = checkPickerMetrics(text, 'tiny-base:latest').samples;
    // Adapter models' requests do not rename the base weights' runner: one model_name.
    const running = samples.filter((s) => s.name === 'vllm:num_requests_running');
    assert.deepEqual(
      running.map((s) => s.labels.model_name),
      ['tiny-base:latest'],
    );
    const lora = samples.filter((s) => s.name === 'vllm:lora_requests_info');
    assert.equal(lora.length, 1);
    assert.equal(lora[0].labels.max_lora, '4');
    assert.deepEqual(lora[0].labels.running_lora_adapters.split(',').sort(), ['ft1:latest', 'ft2:latest']);
    assert.equal(lora[0].labels.waiting_lora_adapters, '');
  });

  it('/api/generate and /api/chat: a lora list replaces the model’s adapters', async () => {
    assert.equal(await generate('ft1', { lora: [{ id: 0, scale: 0 }] }), alone['tiny-base']);
    assert.equal(await generate('ft1', { lora: [] }), alone['tiny-base']);
    assert.equal(await generate('tiny-base', { lora: [{ name: 'ft2', scale: 1 }] }), alone.ft2);
    assert.equal(await generate('ft2', { lora: [{ name: 'ft1', scale: 1 }] }), alone.ft1);
    const chat = async (model: string, lora?: unknown) => {
      const r = await post(t.baseUrl, '/api/chat', {
        model,
        messages: [{ role: 'user', content: PROMPT }],
        stream: false,
        options: GREEDY,
        ...(lora ? { lora } : {}),
      });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return r.json.message.content as string;
    };
    assert.equal(await chat('tiny-base', [{ name: 'ft2', scale: 1 }]), await chat('ft2'));
    assert.equal(await chat('ft1', [{ id: 0, scale: 0 }]), await chat('tiny-base'));
  });

  it('/v1/chat/completions and /v1/completions accept the same lora list', async () => {
    const chat = async (model: string, lora?: unknown) => {
      const r = await post(t.baseUrl, '/v1/chat/completions', {
        model,
        messages: [{ role: 'user', content: PROMPT }],
        temperature: 0,
        seed: 42,
        max_tokens: 12,
        ...(lora ? { lora } : {}),
      });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return r.json.choices[0].message.content as string;
    };
    const chatFt2 = await chat('ft2');
    assert.notEqual(chatFt2, await chat('tiny-base'));
    assert.equal(await chat('tiny-base', [{ name: 'ft2', scale: 1 }]), chatFt2);
    assert.equal(await chat('ft1', [{ id: 0, scale: 0 }]), await chat('tiny-base'));

    const complete = async (model: string, lora?: unknown) => {
      const r = await post(t.baseUrl, '/v1/completions', {
        model,
        prompt: PROMPT,
        temperature: 0,
        seed: 42,
        max_tokens: 12,
        ...(lora ? { lora } : {}),
      });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return r.json.choices[0].text as string;
    };
    const completeFt2 = await complete('ft2');
    assert.equal(await complete('tiny-base', [{ name: 'ft2', scale: 1 }]), completeFt2);
    assert.equal(await complete('ft1', [{ id: 0, scale: 0 }]), await complete('tiny-base'));
  });

  it('bad lora entries are 400s in each dialect; an unknown name is the model-not-found', async () => {
    const native = await post(t.baseUrl, '/api/generate', {
      model: 'ft1',
      prompt: PROMPT,
      lora: [{ id: 3, scale: 1 }],
    });
    assert.equal(native.status, 400);
    assert.equal(native.json.error, 'lora id 3 is out of range: ft1:latest has 1 adapter (ids 0..0)');
    const foreign = await post(t.baseUrl, '/api/chat', {
      model: 'tiny-base',
      messages: [{ role: 'user', content: PROMPT }],
      lora: [{ name: 'qwen', scale: 1 }],
    });
    assert.equal(foreign.status, 400);
    assert.equal(
      foreign.json.error,
      'lora "qwen" is not an adapter of tiny-base:latest: qwen:latest has other base weights',
    );
    const shape = await post(t.baseUrl, '/api/generate', { model: 'ft1', prompt: PROMPT, lora: [{ id: 0 }] });
    assert.equal(shape.status, 400);
    assert.equal(shape.json.error, 'lora scale must be a number from -100 to 100');

    const openai = await post(t.baseUrl, '/v1/chat/completions', {
      model: 'tiny-base',
      messages: [{ role: 'user', content: PROMPT }],
      lora: [{ name: 'qwen', scale: 1 }],
    });
    assert.equal(openai.status, 400);
    assert.equal(openai.json.error.type, 'invalid_request_error');
    assert.match(openai.json.error.message, /^lora "qwen" is not an adapter of tiny-base:latest/);
    const both = await post(t.baseUrl, '/v1/completions', {
      model: 'ft1',
      prompt: PROMPT,
      lora: [{ id: 0, name: 'ft1', scale: 1 }],
    });
    assert.equal(both.status, 400);
    assert.match(both.json.error.message, /exactly one of "id" .* and "name"/);

    const missing = await post(t.baseUrl, '/api/generate', {
      model: 'tiny-base',
      prompt: PROMPT,
      lora: [{ name: 'nope', scale: 1 }],
    });
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error, "model 'nope' not found");
    const missingOpenAI = await post(t.baseUrl, '/v1/completions', {
      model: 'tiny-base',
      prompt: PROMPT,
      lora: [{ name: 'nope', scale: 1 }],
    });
    assert.equal(missingOpenAI.status, 404);
    assert.equal(missingOpenAI.json.error.type, 'not_found_error');
    assert.equal(missingOpenAI.json.error.message, "model 'nope' not found");
  });

  it('/v1/models lists the adapter models with their base as parent', async () => {
    const list = (await (await fetch(`${t.baseUrl}/v1/models`)).json()) as {
      data: { id: string; parent?: string; root?: string }[];
    };
    const byId = new Map(list.data.map((m) => [m.id, m]));
    assert.equal(byId.get('ft1:latest')?.parent, 'tiny-base:latest');
    assert.equal(byId.get('ft2:latest')?.parent, 'tiny-base:latest');
    assert.match(byId.get('ft1:latest')?.root ?? '', /^sha256:[0-9a-f]{64}$/);
    assert.equal(byId.get('tiny-base:latest')?.parent, undefined);
    assert.equal(byId.get('qwen:latest')?.parent, undefined);
    const one = (await (await fetch(`${t.baseUrl}/v1/models/ft2`)).json()) as { id: string; parent?: string };
    assert.deepEqual([one.id, one.parent], ['ft2', 'tiny-base:latest']);
  });
});
