import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

// Issue 23 item 4 with the REAL engine (tiny-qwen2, random weights): a format schema whose properties are named like
// Object.prototype members reaches llama.cpp's json_schema_to_grammar intact, and the grammar makes the output an
// object with exactly those keys.
describe('odd property names through the real grammar (tiny-qwen2)', { skip: addon.skip }, () => {
  let t: TestApp;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'tiny', modelfile: `FROM ${TINY_QWEN2}` });
    assert.equal(res.status, 200);
    await res.text();
  });

  after(() => t?.close());

  it('chat with a schema of `constructor` / `__proto__` / `toString` properties gives JSON with those keys', async () => {
    const keys = ['constructor', '__proto__', 'toString'];
    const properties = keys.map((k) => `"${k}":{"type":"boolean"}`).join(',');
    const format = `{"type":"object","properties":{${properties}},"required":${JSON.stringify(keys)},"additionalProperties":false}`;
    const body =
      `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"JSON please"}],"format":${format},` +
      `"options":{"temperature":1,"seed":3,"num_predict":200,"constructor":1}}`;
    const res = await postJson(`${t.baseUrl}/api/chat`, body);
    assert.equal(res.status, 200, await res.clone().text());
    const content = ((await res.json()) as { message: { content: string } }).message.content;
    const keysOut: string[] = [];
    JSON.parse(content, function (this: unknown, key: string, value: unknown) {
      if (key !== '') keysOut.push(key);
      return value;
    });
    assert.deepEqual(keysOut.sort(), [...keys].sort(), content);
  });
});
