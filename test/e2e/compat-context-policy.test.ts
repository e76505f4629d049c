import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const ADMIN = 'sk-admin-0123456789';
const USER = 'sk-user-9876543210';

/** An admin without limits and a user whose context is capped at 256 tokens (docs/security.md "Tenants"). */
const KEYS_YAML = `keys:
  - key: ${ADMIN}
    name: ops
    role: admin
  - key: ${USER}
    name: team-a
    role: user
    limits:
      max_context: 256
`;

type ModelRow = OpenAI.Models.Model & { context_length?: number; max_context_length?: number };

// Issue 36 item 3: /v1/models' context_length is what a load by THIS caller would get — a tenant's `max_context` cap
// lowers it — and max_context_length is the GGUF's trained context (FakeBinding: no inference needed).
describe("/v1/models context_length follows the caller's policy cap (FakeBinding)", () => {
  let t: TestApp;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-ctx-policy-'));
    const keysFile = join(dir, 'keys.yaml');
    await writeFile(keysFile, KEYS_YAML);
    // OLLAMA_CONTEXT_LENGTH 512 (the test app's default), a model trained for 1,024 tokens.
    t = await createTestApp({ binding: new FakeBinding(), config: { apiKeysFile: keysFile, allowServerPaths: true } });
    const gguf = join(t.modelsDir, 'm.gguf');
    await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}', contextLength: 1024 });
    const res = await postJson(
      `${t.baseUrl}/api/create`,
      { model: 'demo', from: gguf, stream: false },
      { headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' } },
    );
    assert.equal(res.status, 200, await res.text());
  });

  after(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the admin gets the default num_ctx, the capped user 256; both see the trained 1,024 as the maximum', async () => {
    for (const [key, expected] of [
      [ADMIN, 512],
      [USER, 256],
    ] as const) {
      const client = new OpenAI({ baseURL: `${t.baseUrl}/v1`, apiKey: key, maxRetries: 0 });
      const row = (await client.models.list()).data.find((m) => m.id === 'demo:latest') as ModelRow | undefined;
      assert.equal(row?.context_length, expected, key);
      assert.equal(row?.max_context_length, 1024, key);
      const one = (await client.models.retrieve('demo')) as ModelRow;
      assert.equal(one.context_length, expected, key);
      assert.equal(one.max_context_length, 1024, key);
    }
  });
});
