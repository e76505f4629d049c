import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_QWEN2_TOOLS } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** Resolves with the promise's value, or fails the test after `ms` (a guard against a hang, not a speed test). */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

/** A tool whose parameters schema is about `bytes` of JSON text (each under the 64 KiB per-schema limit). */
function parameters(i: number, bytes: number): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (let p = 0, size = 0; size < bytes; p++) {
    const value = { type: 'string', enum: ['alpha', 'beta', 'gamma', `v${p}`] };
    properties[`tool${i}_field${p}`] = value;
    size += JSON.stringify(value).length + 20;
  }
  return { type: 'object', properties };
}

// Issue 32 §1 with the real engine (tiny-qwen2-tools, native mode): a chat far longer than num_ctx is fitted without
// quadratic work, and a request whose tools are huge together is refused before any conversion, on every dialect,
// while the daemon keeps answering.
describe('prompt stage budgets with the real addon (issue 32)', { skip: addon.skip }, () => {
  let t: TestApp;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'tiny', modelfile: `FROM ${TINY_QWEN2_TOOLS}` });
    assert.equal(res.status, 200);
    await res.text();
  });

  after(() => t?.close());

  it('a 4,000-message chat on num_ctx 512 answers (the oldest messages dropped)', async () => {
    const messages = Array.from({ length: 4000 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `message number ${i} of a very long conversation`,
    }));
    const res = await within(
      120_000,
      '4,000-message chat',
      postJson(`${t.baseUrl}/api/chat`, {
        model: 'tiny',
        messages,
        stream: false,
        options: { num_ctx: 512, num_predict: 4, temperature: 0 },
      }),
    );
    const body = (await res.json()) as { done?: boolean; prompt_eval_count?: number; error?: string };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.done, true);
    assert.ok(body.prompt_eval_count! < 512, `prompt of ${body.prompt_eval_count} tokens fits the slot`);
  });

  it('40 tools of 60 KB: a 400 on every dialect before any conversion, while /api/version answers', async () => {
    const tools = Array.from({ length: 40 }, (_, i) => ({ name: `tool_${i}`, schema: parameters(i, 60_000) }));
    const requests: [string, unknown][] = [
      [
        '/v1/chat/completions',
        {
          model: 'tiny',
          messages: [{ role: 'user', content: 'hi' }],
          tools: tools.map((x) => ({ type: 'function', function: { name: x.name, parameters: x.schema } })),
        },
      ],
      [
        '/api/chat',
        {
          model: 'tiny',
          stream: false,
          messages: [{ role: 'user', content: 'hi' }],
          tools: tools.map((x) => ({ type: 'function', function: { name: x.name, parameters: x.schema } })),
        },
      ],
      [
        '/v1/responses',
        {
          model: 'tiny',
          input: 'hi',
          tools: tools.map((x) => ({ type: 'function', name: x.name, parameters: x.schema })),
        },
      ],
      [
        '/v1/messages',
        {
          model: 'tiny',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'hi' }],
          tools: tools.map((x) => ({ name: x.name, input_schema: x.schema })),
        },
      ],
    ];
    for (const [path, body] of requests) {
      let versions = 0;
      let polling = true;
      const poll = (async () => {
        while (polling) {
          const v = await within(2_000, '/api/version during the hostile request', fetch(`${t.baseUrl}/api/version`));
          assert.equal(v.status, 200);
          await v.text();
          versions++;
        }
      })();
      const res = await within(30_000, path, postJson(`${t.baseUrl}${path}`, body));
      polling = false;
      await poll;
      const text = await res.text();
      assert.equal(res.status, 400, `${path}: ${text}`);
      assert.match(text, /the JSON schemas of this request .* more than the limit of 262144 bytes per request/);
      assert.ok(versions >= 1, `${path}: /api/version answered meanwhile`);
    }
  });

  it('tools and a format under the budget still work (native mode tool grammar + format grammar)', async () => {
    const res = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'tiny',
      stream: false,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'small', parameters: parameters(0, 2_000) } }],
      format: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
      options: { num_predict: 40, temperature: 0 },
    });
    const body = (await res.json()) as { message?: { content: string }; error?: string };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(typeof (JSON.parse(body.message!.content) as { ok: unknown }).ok, 'boolean');
  });
});
