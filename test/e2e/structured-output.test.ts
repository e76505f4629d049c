import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { setGoTemplatesForTesting } from '../../src/generation/prompt/go-template.port';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
const grammarSkip =
  addon.skip ??
  (typeof addon.binding?.jsonSchemaToGrammar !== 'function'
    ? 'native addon is built without jsonSchemaToGrammar yet'
    : undefined);

/** A schema whose every value is bounded, so even random weights must finish the object. */
const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    role: { type: 'string', enum: ['admin', 'user'] },
    active: { type: 'boolean' },
  },
  required: ['name', 'age', 'role', 'active'],
  additionalProperties: false,
};

function checkPerson(text: string): void {
  const value = JSON.parse(text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(value).sort(), ['active', 'age', 'name', 'role']);
  assert.equal(typeof value.name, 'string');
  // maxLength counts characters (code points), as the grammar does; .length counts UTF-16 units.
  assert.ok([...(value.name as string)].length <= 8, JSON.stringify(value.name));
  assert.ok(Number.isInteger(value.age) && (value.age as number) >= 0 && (value.age as number) <= 150);
  assert.ok(value.role === 'admin' || value.role === 'user');
  assert.equal(typeof value.active, 'boolean');
}

// Structured outputs (§9) with the REAL engine on tiny-qwen2 (random weights): the grammar alone must make the output
// parse and validate.
describe('structured output with the real addon (§9)', { skip: grammarSkip }, () => {
  let t: TestApp;
  let ollama: Ollama;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1, contextLength: 512 } });
    ollama = new Ollama({ host: t.baseUrl });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'tiny', modelfile: `FROM ${TINY_QWEN2}` });
    assert.equal(res.status, 200);
    await res.text();
  });

  after(() => t?.close());

  for (const seed of [1, 2, 3]) {
    it(`chat with a schema gives JSON that validates (seed ${seed})`, async () => {
      const res = await ollama.chat({
        model: 'tiny',
        messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
        format: PERSON,
        options: { temperature: 1, seed, num_predict: 300 },
      });
      assert.equal(res.done_reason, 'stop', 'the grammar completes the object and ends generation');
      checkPerson(res.message.content);
    });
  }

  it('generate with a schema (streaming) validates too', async () => {
    const stream = await ollama.generate({
      model: 'tiny',
      prompt: 'A person:',
      format: PERSON,
      stream: true,
      options: { temperature: 0.7, seed: 7, num_predict: 300 },
    });
    let text = '';
    for await (const part of stream) text += part.response;
    checkPerson(text);
  });

  it('native mode (GGUF Jinja via renderChat, no Go engine) enforces the schema too', async () => {
    setGoTemplatesForTesting(null);
    try {
      const res = await ollama.chat({
        model: 'tiny',
        messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
        format: PERSON,
        options: { temperature: 1, seed: 11, num_predict: 300 },
      });
      assert.equal(res.done_reason, 'stop');
      checkPerson(res.message.content);
    } finally {
      setGoTemplatesForTesting(undefined);
    }
  });

  it('format "json" starts a JSON object (the fixed GBNF is accepted by llama.cpp)', async () => {
    const res = await ollama.generate({
      model: 'tiny',
      prompt: 'JSON please',
      format: 'json',
      options: { temperature: 0, num_predict: 20 },
    });
    assert.match((res.response ?? '').trimStart(), /^\{/);
  });

  it('an invalid format is a 400 with Ollama’s text', async () => {
    const res = await postJson(`${t.baseUrl}/api/chat`, {
      model: 'tiny',
      messages: [{ role: 'user', content: 'x' }],
      format: 'yaml',
    });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), {
      error: 'invalid format: "\\"yaml\\""; expected "json" or a valid JSON Schema object',
    });
  });
});
