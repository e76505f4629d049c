import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EventCollector, ReceivedEvent } from '../utils/event-stream';
import { FakeBinding } from '../utils/fake-binding';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { postJson, readNdjson } from '../utils/ndjson';
import { registryMissing, RegistryServer, startRegistry } from '../utils/registry-server';
import { createTestApp, TestApp } from '../utils/test-app';

/** Why these tests cannot run here (docker-registry missing), for each test's `skip`; undefined when they can. */
const skip = registryMissing();

const ADMIN = 'sk-admin-0123456789';
const ADMIN2 = 'sk-admin2-0123456789';
const USER = 'sk-user-9876543210';

/** Two admins and a user that may use every model (but did not start the pull). */
const KEYS_YAML = `keys:
  - {key: ${ADMIN}, name: ops, role: admin}
  - {key: ${ADMIN2}, name: ops2, role: admin}
  - {key: ${USER}, name: team-a, role: user, models: ["*"]}
`;

interface Progress {
  status: string;
  digest?: string;
  total?: number;
  completed?: number;
}

/** The NDJSON-like fields of progress events (what /api/pull and /api/push stream, without `done`). */
function records(events: ReceivedEvent[]): Progress[] {
  return events.map(({ data: { model: _m, time: _t, ...rest } }) => rest as unknown as Progress);
}

// Issue 36 item 2: pull and push progress as events, against a REAL Docker Distribution registry on loopback (the
// registry e2e test's setup; skipped with the install command where `docker-registry` is missing).
describe('model events of a push and a pull through docker-registry', () => {
  let t: TestApp;
  let dir: string;
  let registry: RegistryServer;
  let name: string;
  const auth = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

  before(async () => {
    if (skip) return;
    ensureTestModels();
    dir = await mkdtemp(join(tmpdir(), 'llamad-events-registry-'));
    await writeFile(join(dir, 'keys.yaml'), KEYS_YAML);
    registry = await startRegistry();
    t = await createTestApp({
      binding: new FakeBinding(),
      config: { apiKeysFile: join(dir, 'keys.yaml'), allowServerPaths: true },
    });
    name = `${registry.host}/test/tiny:latest`;
    const res = await postJson(
      `${t.baseUrl}/api/create`,
      { model: name, modelfile: `FROM ${TINY_LLAMA_SPM}`, stream: false },
      { headers: auth(ADMIN) },
    );
    assert.equal(res.status, 200, await res.clone().text());
  });

  after(async () => {
    await t?.close();
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it(
    'push and pull progress reach their principal and admins, in the routes’ order; not another user',
    { skip },
    async () => {
      const admin = new EventCollector(`${t.baseUrl}/api/events?model=${encodeURIComponent(name)}`, {
        authorization: `Bearer ${ADMIN}`,
      });
      const admin2 = new EventCollector(`${t.baseUrl}/api/events`, { authorization: `Bearer ${ADMIN2}` });
      const user = new EventCollector(`${t.baseUrl}/api/events`, { authorization: `Bearer ${USER}` });
      try {
        await Promise.all([admin.opened(), admin2.opened(), user.opened()]);
        const pushed = await readNdjson<Progress & { done: boolean }>(
          await postJson(`${t.baseUrl}/api/push`, { model: name, insecure: true }, { headers: auth(ADMIN) }),
        );
        const del = await fetch(`${t.baseUrl}/api/delete`, {
          method: 'DELETE',
          headers: auth(ADMIN),
          body: JSON.stringify({ model: name }),
        });
        assert.equal(del.status, 200);
        const pulled = await readNdjson<Progress & { done: boolean }>(
          await postJson(`${t.baseUrl}/api/pull`, { model: name, insecure: true }, { headers: auth(ADMIN) }),
        );
        assert.equal(pulled.at(-1)?.status, 'success');
        await admin.waitFor((e) => e.type === 'pull.progress' && e.data.status === 'success');
        await admin2.waitFor((e) => e.type === 'pull.progress' && e.data.status === 'success');

        const short = name; // a registry host keeps the whole name as its short form
        const push = admin.events.filter((e) => e.type === 'push.progress');
        const pull = admin.events.filter((e) => e.type === 'pull.progress');
        assert.ok(push.every((e) => e.data.model === short) && pull.every((e) => e.data.model === short));
        // The events carry the routes' records, one for one, in order (without `done`).
        assert.deepEqual(
          records(push),
          pushed.map(({ done: _d, ...r }) => r),
        );
        assert.deepEqual(
          records(pull),
          pulled.map(({ done: _d, ...r }) => r),
        );
        assert.equal(pull[0].data.status, 'pulling manifest');
        const layers = records(pull).filter((r) => r.digest !== undefined);
        assert.ok(layers.length > 0);
        for (const r of layers) assert.ok(r.completed! <= r.total!);
        assert.deepEqual(
          records(admin2.events.filter((e) => e.type === 'pull.progress')),
          records(pull),
          'another admin sees the pull',
        );
        // A load the user may see, as a sentinel: once it arrived, anything published before it would have too.
        const gen = await postJson(
          `${t.baseUrl}/api/generate`,
          { model: name, prompt: 'hi', stream: false, options: { num_predict: 1 } },
          { headers: auth(USER) },
        );
        assert.equal(gen.status, 200, await gen.clone().text());
        await user.waitFor((e) => e.type === 'load.ready' && e.data.model === short);
        assert.equal(
          user.events.some((e) => e.type === 'pull.progress' || e.type === 'push.progress'),
          false,
          'a user does not see another principal’s pull or push',
        );
      } finally {
        admin.close();
        admin2.close();
        user.close();
      }
    },
  );
});
