import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

/** Names of Object.prototype members a JSON body may use as keys (Go decodes them as any other key). */
const ODD_KEYS = ['constructor', '__proto__', 'prototype', 'valueOf', 'toString'];

/** A JSON object text with every odd key set to `value` (as text: `__proto__` must reach the server as a key). */
function oddObject(value: string): string {
  return `{${ODD_KEYS.map((k) => `"${k}":${value}`).join(',')}}`;
}

/** A tool whose parameter schema has properties named like Object.prototype members. */
const ODD_SCHEMA = `{"type":"object","properties":${oddObject('{"type":"string"}')},"required":["constructor"]}`;
const ODD_TOOL = `{"type":"function","function":{"name":"f","description":"d","parameters":${ODD_SCHEMA}}}`;

// Issue 23 item 4: JSON that Go accepts never gives a 500. Keys named like Object.prototype members anywhere in a
// body (tool schemas, format schemas, options, message fields) are carried where they are data (schemas reach the
// template and grammar intact) or ignored where they would be unknown fields.
describe('hostile JSON keys (FakeBinding)', () => {
  let t: TestApp;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding });
    const path = join(t.modelsDir, 'tooly.gguf');
    await writeTinyGguf(path, { chatTemplate: '{% for tool in tools %}{{ tool }}{% endfor %}{{ chatml }}' });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'tooly', modelfile: `FROM ${path}`, stream: false });
    assert.equal(res.status, 200);
  });

  beforeEach(() => {
    binding.renderRequests.length = 0;
    binding.script = () => ({ pieces: ['ok'] });
  });

  after(() => t.close());

  /** The parameters schema of the last rendered request's first tool, parsed. */
  function renderedSchema(): { properties: Record<string, unknown> } {
    const tools = binding.renderRequests.at(-1)?.tools;
    assert.ok(tools && tools.length === 1, 'the tool reached the template');
    return JSON.parse(tools[0].parameters) as { properties: Record<string, unknown> };
  }

  function assertOddPropertiesKept(): void {
    const schema = renderedSchema();
    for (const key of ODD_KEYS) {
      assert.ok(Object.prototype.hasOwnProperty.call(schema.properties, key), `property ${key} kept`);
      assert.deepEqual(schema.properties[key], { type: 'string' });
    }
  }

  const messages = `[{"role":"user","content":"hi","constructor":1,"valueOf":2,"__proto__":{"x":1}}]`;

  it('/api/chat: a tool schema with a `constructor` property reaches the template intact', async () => {
    const body = `{"model":"tooly","stream":false,"messages":${messages},"tools":[${ODD_TOOL}],"options":${oddObject('1')}}`;
    const res = await postJson(`${t.baseUrl}/api/chat`, body);
    assert.equal(res.status, 200, await res.clone().text());
    assertOddPropertiesKept();
  });

  it('/api/chat and /api/generate: a format schema with odd property names is accepted', async () => {
    const format = `{"type":"object","properties":${oddObject('{"type":"string"}')}}`;
    for (const [route, extra] of [
      ['/api/chat', `"messages":${messages}`],
      ['/api/generate', `"prompt":"hi"`],
    ]) {
      const body = `{"model":"tooly","stream":false,${extra},"format":${format},"options":${oddObject('1')}}`;
      const res = await postJson(`${t.baseUrl}${route}`, body);
      assert.equal(res.status, 200, `${route}: ${await res.clone().text()}`);
    }
  });

  it('a format schema over the size limit is a 400 naming the limit, in each dialect, before any conversion', async () => {
    const values = Array.from({ length: 50_000 }, (_, i) => `value${i}`);
    const schema = { type: 'object', properties: { x: { enum: values } }, required: ['x'] };
    const cases: [string, object, (body: unknown) => string][] = [
      [
        '/api/generate',
        { model: 'tooly', prompt: 'hi', stream: false, format: schema },
        (b) => (b as { error: string }).error,
      ],
      [
        '/v1/chat/completions',
        {
          model: 'tooly',
          messages: [{ role: 'user', content: 'hi' }],
          response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
        },
        (b) => (b as { error: { message: string } }).error.message,
      ],
    ];
    for (const [route, body, message] of cases) {
      const res = await postJson(`${t.baseUrl}${route}`, body);
      assert.equal(res.status, 400, route);
      assert.match(
        message(await res.json()),
        // the per-request budget (262144 bytes over format and every tool) is checked first; a schema under it but
        // over 64 KiB meets the per-schema limit
        /the JSON schema is \d+ bytes, more than the limit of 65536 bytes|the JSON schemas of this request \(format and the parameters of every tool\) are at least \d+ bytes, more than the limit of 262144 bytes per request/,
        route,
      );
    }
  });

  it('/api/embed, /api/show, /api/create, /api/copy, /api/delete: odd keys are never a 500', async () => {
    const odd = ODD_KEYS.map((k) => `"${k}":{"a":1}`).join(',');
    for (const [route, body] of [
      ['/api/embed', `{"model":"tooly","input":"x","options":${oddObject('1')},${odd}}`],
      ['/api/show', `{"model":"tooly","options":${oddObject('1')},${odd}}`],
      ['/api/create', `{"model":"odd","from":"tooly","parameters":${oddObject('1')},"stream":false,${odd}}`],
      ['/api/copy', `{"source":"tooly","destination":"tooly2",${odd}}`],
      ['/api/delete', `{"model":"tooly2",${odd}}`],
    ]) {
      const res = await fetch(`${t.baseUrl}${route}`, {
        method: route === '/api/delete' ? 'DELETE' : 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      const text = await res.text();
      assert.ok(res.status < 500, `${route}: ${res.status} ${text}`);
      assert.doesNotMatch(text, /Cannot read properties/);
    }
  });

  it('/v1/chat/completions: a tool schema with a `constructor` property reaches the template intact', async () => {
    const body = `{"model":"tooly","messages":[{"role":"user","content":"hi"}],"tools":[${ODD_TOOL}]}`;
    const res = await postJson(`${t.baseUrl}/v1/chat/completions`, body);
    assert.equal(res.status, 200, await res.clone().text());
    assertOddPropertiesKept();
  });

  it('/v1/messages: a tool input_schema with a `constructor` property reaches the template intact', async () => {
    const tool = `{"name":"f","description":"d","input_schema":${ODD_SCHEMA}}`;
    const body = `{"model":"tooly","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"tools":[${tool}]}`;
    const res = await postJson(`${t.baseUrl}/v1/messages`, body);
    assert.equal(res.status, 200, await res.clone().text());
    assertOddPropertiesKept();
  });

  it('/v1/responses: a function tool with a `constructor` property reaches the template intact', async () => {
    const tool = `{"type":"function","name":"f","description":"d","parameters":${ODD_SCHEMA}}`;
    const body = `{"model":"tooly","input":"hi","tools":[${tool}]}`;
    const res = await postJson(`${t.baseUrl}/v1/responses`, body);
    assert.equal(res.status, 200, await res.clone().text());
    assertOddPropertiesKept();
  });

  it('negative token limits are a 400 in the dialect, naming the field', async () => {
    const user = [{ role: 'user', content: 'hi' }];
    for (const [route, body, param] of [
      ['/v1/chat/completions', { model: 'tooly', messages: user, max_tokens: -1 }, 'max_tokens'],
      ['/v1/chat/completions', { model: 'tooly', messages: user, max_completion_tokens: -5 }, 'max_completion_tokens'],
      ['/v1/completions', { model: 'tooly', prompt: 'hi', max_tokens: -1 }, 'max_tokens'],
      ['/v1/responses', { model: 'tooly', input: 'hi', max_output_tokens: -1 }, 'max_output_tokens'],
    ] as const) {
      const res = await postJson(`${t.baseUrl}${route}`, body);
      assert.equal(res.status, 400, route);
      const error = ((await res.json()) as { error: { type: string; param: string; message: string } }).error;
      assert.equal(error.type, 'invalid_request_error', route);
      assert.equal(error.param, param, route);
      assert.match(error.message, new RegExp(param));
    }
    const res = await postJson(`${t.baseUrl}/v1/messages`, { model: 'tooly', messages: user, max_tokens: -1 });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { type: string; error: { type: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
  });

  it('rendered mode (a Go TEMPLATE): the tool schema keeps its odd property names in the prompt', async () => {
    const path = join(t.modelsDir, 'go.gguf');
    await writeTinyGguf(path, { chatTemplate: '{{ chatml }}' });
    const template =
      '{{ range .Tools }}{{ .Function }}|{{ range $k, $v := .Function.Parameters.Properties }}' +
      '[{{ $k }}={{ $v.Type }}]{{ end }}{{ end }}{{ range .Messages }}{{ .Content }}{{ end }}';
    const created = await postJson(`${t.baseUrl}/api/create`, { model: 'go', from: path, template, stream: false });
    assert.equal(created.status, 200, await created.text());
    const body = `{"model":"go","stream":false,"messages":[{"role":"user","content":"hi"}],"tools":[${ODD_TOOL}]}`;
    const res = await postJson(`${t.baseUrl}/api/chat`, body);
    assert.equal(res.status, 200, await res.clone().text());
    const prompt = binding.models.at(-1)!.detokenize(Int32Array.from(binding.submitted.at(-1)!.tokens));
    for (const key of ODD_KEYS) assert.ok(prompt.includes(`[${key}=string]`), `${key} in ${prompt}`);
  });
});
