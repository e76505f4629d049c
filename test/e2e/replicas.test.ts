// Several replicas as one service (issue 34 item 5), all on loopback: two real daemons (`node dist/src/main.js`, the
// real addon, tiny-qwen2) sharing Debian's redis-server (LLAMAD_REDIS_URL) behind Debian's haproxy (round robin,
// `option httpchk GET /ready` every 200 ms, fall 1; test/utils/haproxy.ts, the configuration docs/deploy.md shows).
// - A Responses conversation continued through the balancer alternates between the replicas and never gets 404 (the
//   responses store is shared through Redis).
// - The metrics of both replicas parse and carry the model-server gauges of item 2 (test/utils/picker-metrics.ts).
// - One replica drained with SIGTERM mid-run (LLAMAD_DRAIN_DELAY: /ready answers 503 at once while it still serves)
//   is taken out by the health check, and no request fails.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DaemonProcess, spawnDaemon } from '../utils/daemon-process';
import { Haproxy, haproxyMissing, startHaproxy } from '../utils/haproxy';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { checkPickerMetrics } from '../utils/picker-metrics';
import { realAddon } from '../utils/real-addon';
import { RedisServer, redisMissing, startRedis } from '../utils/redis-server';

const addon = realAddon();
const skip = addon.skip || redisMissing() || haproxyMissing();

/** One turn through the balancer: its status, the replica that served it, and the response id (200 only). */
interface Turn {
  status: number;
  replica: string | null;
  id?: string;
  body?: string;
}

/** POST /v1/responses (stored, a few tokens), continuing `previous` when given. */
async function turn(base: string, input: string, previous?: string): Promise<Turn> {
  const res = await fetch(`${base}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 't',
      input,
      store: true,
      max_output_tokens: 4,
      ...(previous ? { previous_response_id: previous } : {}),
    }),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  const replica = res.headers.get('x-llamad-replica');
  if (res.status !== 200) return { status: res.status, replica, body: text };
  return { status: 200, replica, id: (JSON.parse(text) as { id: string }).id };
}

describe('two replicas behind haproxy sharing redis-server', { skip }, () => {
  const stores: string[] = [];
  const daemons: DaemonProcess[] = [];
  let redis: RedisServer;
  let lb: Haproxy;

  before(async () => {
    ensureTestModels();
    redis = await startRedis();
    for (let i = 0; i < 2; i++) {
      const store = mkdtempSync(join(tmpdir(), `llamad-replica${i + 1}-`));
      stores.push(store);
      const d = await spawnDaemon(store, {
        LLAMAD_REDIS_URL: redis.url,
        LLAMAD_DRAIN_DELAY: '2s',
        OLLAMA_NUM_PARALLEL: '2',
        OLLAMA_CONTEXT_LENGTH: '2048',
      });
      daemons.push(d);
      // Each replica has its own model store: the same model created in each (as an image would ship it).
      const created = await fetch(`${d.base}/api/create`, {
        method: 'POST',
        body: JSON.stringify({ model: 't', modelfile: `FROM ${TINY_QWEN2}\n`, stream: false }),
      });
      assert.equal(created.status, 200, await created.text());
    }
    lb = await startHaproxy(daemons.map((d, i) => ({ name: `r${i + 1}`, port: d.port })));
  });

  after(async () => {
    await lb?.stop();
    for (const d of daemons) await d.kill();
    await redis?.stop();
    for (const s of stores) rmSync(s, { recursive: true, force: true });
  });

  it('a conversation continued 10 times through the balancer alternates replicas and never gets 404', async () => {
    const turns: Turn[] = [await turn(lb.base, 'Hello')];
    for (let i = 0; i < 10; i++) turns.push(await turn(lb.base, `Turn ${i + 1}: go on.`, turns.at(-1)!.id));
    for (const t of turns) assert.equal(t.status, 200, JSON.stringify(t));
    const replicas = turns.map((t) => t.replica);
    assert.deepEqual(new Set(replicas), new Set(['r1', 'r2']), replicas.join(' '));
    for (let i = 1; i < replicas.length; i++) {
      assert.notEqual(replicas[i], replicas[i - 1], `round robin alternates: ${replicas.join(' ')}`);
    }
    // Either replica answers GET for the last one (and for the first: the chain is all in Redis).
    for (const d of daemons) {
      for (const id of [turns[0].id, turns.at(-1)!.id]) {
        const got = await fetch(`${d.base}/v1/responses/${id}`);
        assert.equal(got.status, 200, `${d.base} ${id}`);
        assert.equal(((await got.json()) as { id: string }).id, id);
      }
    }
  });

  it('the metrics of both replicas parse and carry the model-server gauges', async () => {
    for (const d of daemons) {
      const res = await fetch(`${d.base}/metrics`);
      assert.equal(res.status, 200);
      // The endpoint picker's specs (names, types, labels, value ranges), with t:latest's per-model series.
      checkPickerMetrics(await res.text(), 't:latest');
    }
  });

  it('a replica drained with SIGTERM mid-run is taken out by the health check with no failed request', async () => {
    const [r1] = daemons;
    const results: Turn[] = [];
    let stop = false;
    // Two clients, each continuing its own conversation through the balancer until told to stop.
    const client = async (name: string) => {
      let previous: string | undefined;
      for (let i = 0; !stop; i++) {
        const t = await turn(lb.base, `${name} ${i}`, previous);
        results.push(t);
        if (t.status !== 200) return;
        previous = t.id;
      }
    };
    // And two that list the models as fast as they can: requests in every phase of the drain.
    const lister = async () => {
      while (!stop) {
        const res = await fetch(`${lb.base}/v1/models`, { signal: AbortSignal.timeout(60_000) });
        const body = await res.text();
        results.push({ status: res.status, replica: res.headers.get('x-llamad-replica'), body });
      }
    };
    const clients = [client('a'), client('b'), lister(), lister()];
    const until = async (check: () => boolean, what: string, ms = 60_000) => {
      const deadline = Date.now() + ms;
      while (!check()) {
        const failed = results.filter((t) => t.status !== 200);
        if (failed.length > 0) assert.fail(`a request failed: ${JSON.stringify(failed)}`);
        if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      await until(() => results.filter((t) => t.id).length >= 6, 'the first turns');
      r1.child.kill('SIGTERM');
      let states: Record<string, string> = {};
      const downBy = Date.now() + 10_000;
      while (states.r1 !== 'DOWN' && Date.now() < downBy) {
        states = await lb.serverStates();
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(states.r1, 'DOWN', 'the health check took r1 out during its drain delay');
      const exit = await r1.exited;
      assert.deepEqual(exit, { code: 0, signal: null }, 'r1 drained and exited cleanly');
      const served = results.filter((t) => t.id).length;
      await until(() => results.filter((t) => t.id).length >= served + 6, 'turns after r1 exited');
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    const failed = results.filter((t) => t.status !== 200);
    assert.deepEqual(failed, [], 'no request failed');
    assert.ok(results.some((t) => t.replica === 'r1') && results.some((t) => t.replica === 'r2'));
    assert.equal(results.at(-1)!.replica, 'r2', 'only r2 serves once r1 is gone');
    assert.equal((await lb.serverStates()).r2, 'UP');
  });
});
