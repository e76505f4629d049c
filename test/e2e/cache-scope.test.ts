import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { CacheScopeMode } from '../../src/config';
import { cli } from '../utils/cli';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

const KEY_A = 'cache-scope-key-a';
const KEY_B = 'cache-scope-key-b';

/**
 * A chat whose prompt is well over the 64 tokens the host-RAM prompt cache keeps at least (docs/native.md), so that a
 * conversation a slot drops for another principal's is kept and can come back.
 */
const CHAT: OpenAI.ChatCompletionCreateParamsNonStreaming = {
  model: 'qwen',
  messages: [
    {
      role: 'system',
      content:
        'You are the internal assistant of a small company. The quarterly numbers are confidential: revenue grew ' +
        'by eleven percent, the Berlin office closes in March, and the new product is called Falcon. Never reveal ' +
        'any of this to anyone outside the finance team, and answer every other question briefly and politely.',
    },
    { role: 'user', content: 'What is the name of the new product?' },
  ],
  max_tokens: 2,
  temperature: 0,
};

/** `usage.prompt_tokens_details.cached_tokens` and `prompt_tokens` of one chat completion with `client`. */
async function usageOf(client: OpenAI): Promise<{ cached: number; prompt: number }> {
  const answer = await client.chat.completions.create(CHAT);
  assert.ok(answer.usage, 'usage is reported');
  return { cached: answer.usage.prompt_tokens_details?.cached_tokens ?? 0, prompt: answer.usage.prompt_tokens };
}

/** A daemon with the two API keys (and the host-RAM prompt cache at its default), one slot and the given LLAMAD_CACHE_SCOPE (undefined: unset), model `qwen`. */
async function daemon(cacheScope: CacheScopeMode | undefined): Promise<TestApp> {
  const t = await createTestApp({
    binding: addon.binding,
    config: {
      apiKeys: [KEY_A, KEY_B],
      allowServerPaths: true, // FROM <test model path> with keys set
      numParallel: 1,
      contextLength: 2048,
      ...(cacheScope ? { cacheScope } : {}),
    },
  });
  const res = await postJson(
    `${t.baseUrl}/api/create`,
    { model: 'qwen', modelfile: `FROM ${TINY_QWEN2}\nPARAMETER temperature 0`, stream: false },
    { headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}` } },
  );
  assert.equal(res.status, 200, await res.text());
  return t;
}

const clientFor = (t: TestApp, key: string) => new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: key, maxRetries: 0 });

// Issue 32 item 7 (docs/security.md "Cache scope"): with API keys set, one key's requests never reuse the KV prefix
// or the kept prompt states of another key's, so `cached_tokens` cannot tell key B what key A asked.
describe('cache scope per principal (real addon, runner process)', { skip: addon.skip }, () => {
  let t: TestApp;

  before(async () => {
    ensureTestModels();
    t = await daemon(undefined); // unset: `principal`, since keys are configured
  });
  after(() => t?.close());

  it('key B gets cached_tokens 0 for the prompt key A just sent; each key reuses its own', async () => {
    const a = clientFor(t, KEY_A);
    const b = clientFor(t, KEY_B);
    const first = await usageOf(a);
    assert.ok(first.prompt > 64, `a prompt the RAM cache keeps (${first.prompt} tokens)`);
    const repeat = await usageOf(a);
    assert.ok(repeat.cached > 0, `key A reuses its own prefix (cached ${repeat.cached})`);
    const other = await usageOf(b);
    assert.equal(other.prompt, first.prompt);
    assert.equal(other.cached, 0, "key B reuses nothing of key A's prompt");
    // Key B took the only slot: key A's conversation was kept in host RAM for key A, and comes back from there.
    const back = await usageOf(a);
    assert.ok(back.cached > 0, `key A restores its conversation (cached ${back.cached})`);
    const otherAgain = await usageOf(b);
    assert.ok(otherAgain.cached > 0, `key B restores its own (cached ${otherAgain.cached})`);
  });
});

describe('LLAMAD_CACHE_SCOPE=global shares prefixes between keys (real addon)', { skip: addon.skip }, () => {
  let t: TestApp;

  before(async () => {
    ensureTestModels();
    t = await daemon('global');
  });
  after(() => t?.close());

  it("key B reuses key A's prefix", async () => {
    await usageOf(clientFor(t, KEY_A));
    const other = await usageOf(clientFor(t, KEY_B));
    assert.ok(other.cached > 0, `cached ${other.cached}`);
  });
});

describe('a bad LLAMAD_CACHE_SCOPE', () => {
  // Bounded: a daemon that ignored the value would listen forever.
  it(
    'stops `llamad serve` at start with the setting, the value and the allowed values',
    { timeout: 30_000 },
    async () => {
      const run = await cli(['serve'], { LLAMAD_CACHE_SCOPE: 'tenant', OLLAMA_HOST: '127.0.0.1:0' });
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.match(
        run.stderr,
        /llamad failed to start: LLAMAD_CACHE_SCOPE must be "principal" or "global", not "tenant"/,
      );
    },
  );
});
