import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { createModel, postJson } from '../utils/ndjson';
import { runnersOf } from '../utils/processes';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** A raw prompt of a few hundred tokens, different from the first word on for each `name`. */
function conversation(name: string): string {
  const lines = Array.from(
    { length: 24 },
    (_, i) => `${name} line ${i}: the ${name.toLowerCase()} notes item ${i * 7 + 3} in the log.`,
  );
  return `${name} says:\n${lines.join('\n')}\nAnswer:`;
}

/** A Prometheus sample's value, or 0 when absent. */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}

// LLAMAD_CACHE_RAM with one slot (OLLAMA_NUM_PARALLEL=1) and the real runner process: conversation A, then B takes
// the slot, then A comes back with one more turn. With the host-RAM cache A's prefix is restored (the cached-token
// counter grows by about A's first prompt); with LLAMAD_CACHE_RAM=0 it is evaluated again.
for (const cacheRamMiB of [64, 0]) {
  describe(`the host-RAM prompt cache through the API (LLAMAD_CACHE_RAM=${cacheRamMiB})`, { skip: addon.skip }, () => {
    let t: TestApp;

    before(async () => {
      ensureTestModels();
      t = await createTestApp({
        binding: addon.binding,
        config: { numParallel: 1, contextLength: 1024, cacheRamMiB },
      });
      await createModel(t.baseUrl, 'tiny', `FROM ${TINY_QWEN2}\nPARAMETER temperature 0`);
    });

    after(() => t?.close());

    async function generate(prompt: string): Promise<{ response: string; promptTokens: number }> {
      const res = await postJson(`${t.baseUrl}/api/generate`, {
        model: 'tiny',
        prompt,
        raw: true,
        stream: false,
        options: { temperature: 0, num_predict: 8 },
      });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { response: string; prompt_eval_count: number };
      return { response: body.response, promptTokens: body.prompt_eval_count };
    }

    async function metrics(): Promise<string> {
      return (await fetch(`${t.baseUrl}/metrics`)).text();
    }

    it(cacheRamMiB > 0 ? 'resumes an evicted conversation from RAM' : 'evaluates it again', async () => {
      const a = conversation('Alice');
      const first = await generate(a);
      assert.ok(first.promptTokens > 150, `prompt of ${first.promptTokens} tokens`);
      assert.equal(runnersOf(process.pid).length, 1, 'the model runs in a runner process');
      await generate(conversation('Bob')); // takes the only slot
      const before = sample(await metrics(), 'llamad_prompt_cached_tokens_total{model="tiny:latest"}');
      const back = await generate(`${a}${first.response}\nAlice says: and then?\nAnswer:`);
      const text = await metrics();
      const cached = sample(text, 'llamad_prompt_cached_tokens_total{model="tiny:latest"}') - before;
      assert.ok(back.promptTokens > first.promptTokens);
      const ps = (await (await fetch(`${t.baseUrl}/api/ps`)).json()) as {
        models: { parallel?: { ram_cache?: { entries: number; bytes: number; hits: number; tokens: number } } }[];
      };
      const ramCache = ps.models[0].parallel?.ram_cache;
      if (cacheRamMiB > 0) {
        assert.equal(ramCache?.hits, 1, '/api/ps parallel.ram_cache');
        assert.ok((ramCache?.tokens ?? 0) >= first.promptTokens - 2);
        // Everything up to the first answer's boundary comes from RAM (re-tokenizing the answer may differ at its end).
        assert.ok(cached >= first.promptTokens - 2, `cached ${cached} of ${back.promptTokens}`);
        assert.equal(sample(text, 'llamad_prompt_cache_ram_hits{model="tiny:latest"}'), 1);
        assert.ok(sample(text, 'llamad_prompt_cache_ram_bytes{model="tiny:latest"}') > 0, 'B is kept now');
      } else {
        assert.equal(ramCache, undefined);
        assert.ok(cached < 10, `cached ${cached}`);
        assert.equal(sample(text, 'llamad_prompt_cache_ram_hits{model="tiny:latest"}'), 0);
      }
    });
  });
}
