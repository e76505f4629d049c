import Anthropic, { BadRequestError as AnthropicBadRequest } from '@anthropic-ai/sdk';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI, { BadRequestError } from 'openai';
import { ensureTestModels, TINY_BERT, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

interface PsRow {
  name: string;
  expires_at: string;
  context_length: number;
}

/** A request body with `keep_alive` added (beyond the SDKs' types: sent as is, as any extra body field). */
function withKeepAlive<T extends object>(params: T, keepAlive: unknown): T {
  return { ...params, keep_alive: keepAlive } as T;
}

// Issue 36 item 3: `keep_alive` on the compatibility routes with the native routes' meaning (Ollama PR 11249,
// beyond Ollama), and `context_length` / `max_context_length` on /v1/models, through the official `openai` and
// `@anthropic-ai/sdk` clients against the real app and addon. OLLAMA_CONTEXT_LENGTH is 512 (the test app's default).
describe('compat routes: keep_alive and /v1/models context lengths (real addon)', { skip: addon.skip }, () => {
  let t: TestApp;
  let openai: OpenAI;
  let anthropic: Anthropic;
  /** tiny-qwen2's trained context (`<arch>.context_length`), from /api/show. */
  let trained = 0;

  /** Whether a /api/ps row is `model` (rows carry the listed name, `tiny:latest`). */
  const isModel = (row: PsRow, model: string) => row.name === model || row.name === `${model}:latest`;

  async function ps(): Promise<PsRow[]> {
    const res = await fetch(`${t.baseUrl}/api/ps`);
    return ((await res.json()) as { models: PsRow[] }).models;
  }

  /** Waits (bounded: a hang guard, not a timing assertion) until `model` is (not) in /api/ps. */
  async function untilLoaded(model: string, loaded: boolean): Promise<PsRow[]> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const rows = await ps();
      if (rows.some((r) => isModel(r, model)) === loaded) return rows;
      if (Date.now() > deadline) {
        assert.fail(`${model} still ${loaded ? 'not ' : ''}in /api/ps: ${JSON.stringify(rows)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Minutes from now until the runner of `model` expires, per /api/ps. */
  async function minutesLeft(model: string): Promise<number> {
    const row = (await ps()).find((r) => isModel(r, model));
    assert.ok(row, `${model} is loaded`);
    return (Date.parse(row.expires_at) - Date.now()) / 60_000;
  }

  async function unload(model: string): Promise<void> {
    const res = await postJson(`${t.baseUrl}/api/generate`, { model, keep_alive: 0, stream: false });
    assert.equal(res.status, 200, await res.text());
    await untilLoaded(model, false);
  }

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1 } });
    openai = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: 'x', maxRetries: 0, timeout: 120_000 });
    anthropic = new Anthropic({ baseURL: t.baseUrl, apiKey: 'x', maxRetries: 0, timeout: 120_000 });
    for (const [model, path] of [
      ['tiny', TINY_QWEN2],
      ['bert', TINY_BERT],
    ]) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile: `FROM ${path}`, stream: false });
      assert.equal(res.status, 200, model);
    }
    const show = await postJson(`${t.baseUrl}/api/show`, { model: 'tiny' });
    const info = ((await show.json()) as { model_info: Record<string, unknown> }).model_info;
    trained = info[`${String(info['general.architecture'])}.context_length`] as number;
    assert.ok(trained > 1024, `tiny-qwen2 is trained for ${trained} tokens`);
  });

  after(() => t?.close());

  it('/v1/models before any load: context_length = the default num_ctx (512), max = the trained context', async () => {
    assert.deepEqual(await ps(), []);
    const list = await openai.models.list();
    const rows = new Map(list.data.map((m) => [m.id, m as OpenAI.Models.Model & Record<string, unknown>]));
    assert.equal(rows.get('tiny:latest')?.context_length, 512);
    assert.equal(rows.get('tiny:latest')?.max_context_length, trained);
    for (const row of rows.values()) {
      assert.equal(typeof row.context_length, 'number', row.id);
      assert.equal(typeof row.max_context_length, 'number', row.id);
    }
    const one = (await openai.models.retrieve('tiny')) as OpenAI.Models.Model & Record<string, unknown>;
    assert.equal(one.id, 'tiny');
    assert.equal(one.context_length, 512);
    assert.equal(one.max_context_length, trained);
  });

  it('/v1/models after a load with num_ctx 1024: context_length follows the loaded runner (as /api/ps)', async () => {
    const res = await postJson(`${t.baseUrl}/api/generate`, {
      model: 'tiny',
      prompt: 'hi',
      stream: false,
      options: { num_ctx: 1024, num_predict: 1 },
    });
    assert.equal(res.status, 200, await res.text());
    const [row] = await ps();
    assert.equal(row.context_length, 1024);
    const listed = (await openai.models.list()).data.find((m) => m.id === 'tiny:latest') as unknown as PsRow &
      Record<string, unknown>;
    assert.equal(listed.context_length, 1024);
    assert.equal(listed.max_context_length, trained);
    const one = (await openai.models.retrieve('tiny')) as unknown as Record<string, unknown>;
    assert.equal(one.context_length, 1024);
    await unload('tiny');
    const after = (await openai.models.retrieve('tiny')) as unknown as Record<string, unknown>;
    assert.equal(after.context_length, 512, 'unloaded: the default again');
  });

  it('/v1/chat/completions keep_alive 0 unloads after the request; "10m" keeps it 10 minutes', async () => {
    const body = { model: 'tiny', messages: [{ role: 'user' as const, content: 'Hi' }], max_tokens: 2 };
    const kept = await openai.chat.completions.create(withKeepAlive(body, '10m'));
    assert.equal(kept.object, 'chat.completion');
    const left = await minutesLeft('tiny');
    assert.ok(left > 9 && left <= 10, `${left} minutes left`);
    await openai.chat.completions.create(withKeepAlive(body, 0));
    await untilLoaded('tiny', false);
  });

  it('/v1/completions and /v1/responses: keep_alive -1 keeps the model forever, 0 unloads it', async () => {
    await openai.completions.create(withKeepAlive({ model: 'tiny', prompt: 'Once', max_tokens: 2 }, -1));
    assert.ok((await minutesLeft('tiny')) > 100 * 365 * 24 * 60, 'forever: ~292 years ahead, as Ollama');
    await openai.responses.create(withKeepAlive({ model: 'tiny', input: 'Hello', max_output_tokens: 2 }, 0));
    await untilLoaded('tiny', false);
    await openai.responses.create(withKeepAlive({ model: 'tiny', input: 'Hello', max_output_tokens: 2 }, 90));
    const left = await minutesLeft('tiny');
    assert.ok(left > 1 && left <= 1.5, `90 s: ${left} minutes left`);
    await openai.completions.create(withKeepAlive({ model: 'tiny', prompt: 'Once', max_tokens: 2 }, '0s'));
    await untilLoaded('tiny', false);
  });

  it('/v1/embeddings keep_alive: "1h" keeps the embedding model, 0 unloads it', async () => {
    const res = await openai.embeddings.create(withKeepAlive({ model: 'bert', input: 'hello' }, '1h'));
    assert.equal(res.data.length, 1);
    const left = await minutesLeft('bert');
    assert.ok(left > 59 && left <= 60, `${left} minutes left`);
    await openai.embeddings.create(withKeepAlive({ model: 'bert', input: 'hello' }, 0));
    await untilLoaded('bert', false);
  });

  it('/v1/messages keep_alive (Anthropic SDK): "5m" keeps it, 0 unloads it', async () => {
    const body = { model: 'tiny', max_tokens: 2, messages: [{ role: 'user' as const, content: 'Hi' }] };
    const msg = await anthropic.messages.create(withKeepAlive(body, '5m'));
    assert.equal(msg.type, 'message');
    const left = await minutesLeft('tiny');
    assert.ok(left > 4 && left <= 5, `${left} minutes left`);
    await anthropic.messages.create(withKeepAlive(body, 0));
    await untilLoaded('tiny', false);
  });

  it('an invalid keep_alive is a 400 in each dialect, naming the field, and loads nothing', async () => {
    const chat = { model: 'tiny', messages: [{ role: 'user' as const, content: 'Hi' }], max_tokens: 2 };
    const cases: Array<[unknown, RegExp]> = [
      ['soon', /^invalid keep_alive: time: invalid duration "soon"$/],
      ['300', /^invalid keep_alive: time: missing unit in duration "300"$/],
      [true, /^invalid keep_alive: Unsupported type: 'bool'$/],
      [{ minutes: 5 }, /^invalid keep_alive: Unsupported type: 'map\[string\]interface \{\}'$/],
    ];
    for (const [value, message] of cases) {
      const calls: Array<[string, () => Promise<unknown>]> = [
        ['chat', () => openai.chat.completions.create(withKeepAlive(chat, value))],
        ['completions', () => openai.completions.create(withKeepAlive({ model: 'tiny', prompt: 'x' }, value))],
        ['responses', () => openai.responses.create(withKeepAlive({ model: 'tiny', input: 'x' }, value))],
        ['embeddings', () => openai.embeddings.create(withKeepAlive({ model: 'bert', input: 'x' }, value))],
      ];
      for (const [route, call] of calls) {
        await assert.rejects(call, (err: unknown) => {
          assert.ok(err instanceof BadRequestError, `${route}: ${String(err)}`);
          assert.equal(err.status, 400);
          const body = err.error as { message: string; type: string; param: string | null };
          assert.match(body.message, message, route);
          assert.equal(body.type, 'invalid_request_error', route);
          assert.equal(body.param, 'keep_alive', route);
          return true;
        });
      }
      await assert.rejects(
        anthropic.messages.create(withKeepAlive({ ...chat, max_tokens: 2 }, value)),
        (err: unknown) => {
          assert.ok(err instanceof AnthropicBadRequest, String(err));
          assert.equal(err.status, 400);
          const body = err.error as { type: string; error: { type: string; message: string } };
          assert.equal(body.type, 'error');
          assert.equal(body.error.type, 'invalid_request_error');
          assert.match(body.error.message, message);
          return true;
        },
      );
    }
    assert.deepEqual(await ps(), [], 'a rejected request loads nothing');
  });
});
