import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { createModel, postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** One /api/generate stream: when its first and last lines arrived (ms, performance.now()) and its final line. */
interface StreamTimes {
  first: number;
  last: number;
  final: Record<string, unknown>;
  response: string;
}

/** The `parallel` field of an /api/ps entry (beyond Ollama). */
interface PsParallel {
  slots: number;
  slots_busy: number;
  kv_shared: boolean;
  kv_cells: number;
  kv_cells_used: number;
}

// OLLAMA_NUM_PARALLEL unset (the default): 4 slots per model over one KV cache of num_ctx cells, as llama-server's
// `-np -1`. With the real addon and tiny-qwen2 (greedy, so outputs repeat): concurrent requests run at once, a lone
// request still has its whole num_ctx, and a request that finds the cells taken waits without cutting the running one.
describe('parallel slots by default with the real addon', { skip: addon.skip }, () => {
  let t: TestApp;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { contextLength: 512 } });
    await createModel(t.baseUrl, 'tiny', `FROM ${TINY_QWEN2}\nPARAMETER temperature 0`);
  });

  after(() => t?.close());

  async function stream(body: Record<string, unknown>): Promise<StreamTimes> {
    const res = await postJson(`${t.baseUrl}/api/generate`, { model: 'tiny', ...body });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffered = '';
    let first = 0;
    let last = 0;
    let final: Record<string, unknown> = {};
    let response = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += decoder.decode(value, { stream: true });
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines.filter((l) => l.trim() !== '')) {
        const chunk = JSON.parse(line) as Record<string, unknown>;
        last = performance.now();
        if (first === 0) first = last;
        response += (chunk.response as string | undefined) ?? '';
        if (chunk.done) final = chunk;
      }
    }
    return { first, last, final, response };
  }

  async function ps(): Promise<{ context_length: number; parallel?: PsParallel }> {
    const body = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as {
      models: { context_length: number; parallel?: PsParallel }[];
    };
    return body.models[0];
  }

  it('serves 4 concurrent requests at once: their streams overlap', async () => {
    const options = { temperature: 0, seed: 1, num_predict: 100 };
    await stream({ prompt: 'Hi', options: { ...options, num_predict: 1 } }); // load first
    let maxBusy = 0;
    let polling = true;
    const poller = (async () => {
      while (polling) {
        maxBusy = Math.max(maxBusy, (await ps()).parallel?.slots_busy ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const runs = await Promise.all(
      ['a llama', 'a camel', 'an alpaca', 'a vicuna'].map((animal) =>
        stream({ prompt: `Tell me about ${animal}.`, options }),
      ),
    );
    polling = false;
    await poller;
    for (const r of runs) assert.equal(r.final.eval_count, 100);
    // Every stream had started before any of them ended: they were decoded together, not one after another.
    const lastStart = Math.max(...runs.map((r) => r.first));
    const firstEnd = Math.min(...runs.map((r) => r.last));
    assert.ok(lastStart < firstEnd, `last start ${lastStart} vs first end ${firstEnd}`);
    const info = await ps();
    assert.equal(info.context_length, 512);
    assert.equal(info.parallel?.slots, 4);
    assert.equal(info.parallel?.kv_shared, true);
    assert.equal(info.parallel?.kv_cells, 512, 'one num_ctx of cells in all, shared');
    assert.ok(maxBusy >= 2, `at most ${maxBusy} slots seen busy`);
  });

  it('gives a lone request its whole num_ctx', async () => {
    const r = await stream({
      prompt: 'Tell me a long story about a llama.',
      options: { temperature: 0, num_ctx: 64, num_predict: 200 },
      shift: false,
    });
    assert.equal(r.final.done_reason, 'length');
    // Every sampled token but the last is decoded: prompt + (eval_count - 1) = num_ctx, as with one slot.
    assert.equal(r.final.eval_count, 64 - (r.final.prompt_eval_count as number) + 1);
  });

  it('makes a newcomer wait for cells, then completes it without truncating the running request', async () => {
    const options = { temperature: 0, num_ctx: 128, num_predict: 90 };
    const firstBody = { prompt: 'Tell me a long story about a llama.', options, shift: false };
    const longPrompt = `Repeat after me: ${'llama '.repeat(40)}`;
    const secondBody = { prompt: longPrompt, options: { ...options, num_predict: 40 }, shift: false };
    const aloneFirst = await stream(firstBody);
    const aloneSecond = await stream(secondBody);
    assert.equal(aloneFirst.final.eval_count, 90);
    const firstPrompt = aloneFirst.final.prompt_eval_count as number;
    const secondPrompt = aloneSecond.final.prompt_eval_count as number;
    assert.ok(firstPrompt + 90 + secondPrompt + 40 > 128, 'together they do not fit the shared cache');

    const first = stream(firstBody);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = stream(secondBody);
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.final.done_reason, 'length');
    assert.equal(a.final.eval_count, 90, 'the running request was not cut short');
    assert.equal(a.response, aloneFirst.response, 'nor shifted');
    assert.equal(b.final.eval_count, aloneSecond.final.eval_count, 'the newcomer completed');
    assert.equal(b.response, aloneSecond.response);
    const info = await ps();
    assert.equal(info.parallel?.slots_busy, 0);
  });
});
