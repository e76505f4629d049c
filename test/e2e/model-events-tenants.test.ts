import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { InMemoryModelEvents, MODEL_EVENTS } from '../../src/observability/model-events';
import { GracefulShutdownService } from '../../src/operations/shutdown/graceful-shutdown.service';
import { EventCollector } from '../utils/event-stream';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

const ADMIN = 'sk-admin-0123456789';
const ADMIN2 = 'sk-admin2-0123456789';
const USER = 'sk-user-9876543210';

/** Two admins and a user limited to `demo`. */
const KEYS_YAML = `keys:
  - key: ${ADMIN}
    name: ops
    role: admin
  - key: ${ADMIN2}
    name: ops2
    role: admin
  - key: ${USER}
    name: team-a
    role: user
    models: [demo]
`;

function auth(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
}

// Issue 36 item 2: GET /api/events shows each caller only what its principal may see (docs/security.md "Model
// events"): events of models its policy lets it use, and pull/push/create events only to their principal and admins.
describe('model events per principal (FakeBinding, keys file)', () => {
  let t: TestApp;
  let dir: string;
  const binding = new FakeBinding();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-events-'));
    const keysFile = join(dir, 'keys.yaml');
    await writeFile(keysFile, KEYS_YAML);
    t = await createTestApp({ binding, config: { apiKeysFile: keysFile, allowServerPaths: true } });
    binding.script = () => ({ pieces: ['a'] });
  });

  after(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('needs a key like every route; is in the OpenAPI document and the HTTP metrics; a client that leaves is gone', async () => {
    assert.equal((await fetch(`${t.baseUrl}/api/events`)).status, 401);
    const bus = t.app.get<InMemoryModelEvents>(MODEL_EVENTS);
    const controller = new AbortController();
    const res = await fetch(`${t.baseUrl}/api/events`, { headers: auth(USER), signal: controller.signal });
    assert.equal(res.status, 200);
    await res.body!.getReader().read();
    assert.equal(bus.openStreams, 1);
    controller.abort();
    const deadline = Date.now() + 5000;
    while (bus.openStreams > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(bus.openStreams, 0, 'the stream was unsubscribed when the client left');

    const doc = (await (await fetch(`${t.baseUrl}/openapi.json`, { headers: auth(ADMIN) })).json()) as {
      paths: Record<string, { get?: { responses: Record<string, { content?: Record<string, unknown> }> } }>;
    };
    assert.ok(doc.paths['/api/events']?.get?.responses['200']?.content?.['text/event-stream']);
    const metrics = await (await fetch(`${t.baseUrl}/metrics`, { headers: auth(ADMIN) })).text();
    assert.match(metrics, /llamad_http_requests_total\{[^}]*route="\/api\/events"[^}]*\} \d+/);
  });

  it('a user sees loads of its models only and no one else’s create; another admin sees everything', async () => {
    const admin2 = new EventCollector(`${t.baseUrl}/api/events`, { authorization: `Bearer ${ADMIN2}` });
    const user = new EventCollector(`${t.baseUrl}/api/events`, { authorization: `Bearer ${USER}` });
    const userSecret = new EventCollector(`${t.baseUrl}/api/events?model=secret`, {
      authorization: `Bearer ${USER}`,
    });
    try {
      await Promise.all([admin2.opened(), user.opened(), userSecret.opened()]);
      for (const model of ['demo', 'secret']) {
        const gguf = join(t.modelsDir, `${model}.gguf`);
        await writeTinyGguf(gguf, { chatTemplate: '{{ chatml }}', contextLength: model === 'demo' ? 512 : 1024 });
        const res = await postJson(
          `${t.baseUrl}/api/create`,
          { model, from: gguf, stream: false },
          { headers: auth(ADMIN) },
        );
        assert.equal(res.status, 200, await res.text());
      }
      const gen = (key: string, model: string) =>
        postJson(`${t.baseUrl}/api/generate`, { model, prompt: 'hi', stream: false }, { headers: auth(key) });
      assert.equal((await gen(ADMIN, 'secret')).status, 200);
      assert.equal((await gen(USER, 'demo')).status, 200);
      // Events arrive in order: once the user's load of demo is there, everything before it is too.
      await user.waitFor((e) => e.type === 'load.ready' && e.data.model === 'demo:latest');
      await admin2.waitFor((e) => e.type === 'load.ready' && e.data.model === 'demo:latest');

      assert.deepEqual(
        user.events.map((e) => [e.type, e.data.model]),
        [
          ['load.start', 'demo:latest'],
          ['load.ready', 'demo:latest'],
        ],
        'no create steps (another principal’s), nothing of secret',
      );
      const seen = new Set(admin2.events.map((e) => `${e.type} ${e.data.model}`));
      for (const expected of [
        'create.step demo:latest',
        'create.step secret:latest',
        'load.start secret:latest',
        'load.ready secret:latest',
        'load.ready demo:latest',
      ]) {
        assert.ok(seen.has(expected), `an admin sees ${expected}`);
      }
      assert.deepEqual(userSecret.events, [], 'a model outside the list stays invisible through model= too');
    } finally {
      admin2.close();
      user.close();
      userSecret.close();
    }
  });

  it('the drain ends open streams instead of waiting for them', async () => {
    const res = await fetch(`${t.baseUrl}/api/events`, { headers: auth(ADMIN) });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    await reader.read(); // the retry frame
    const drained = await t.app.get(GracefulShutdownService).drain(30_000, 0);
    assert.equal(drained.timedOut, false);
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
    }
  });
});
