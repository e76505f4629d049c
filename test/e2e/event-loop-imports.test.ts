import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { DaemonProcess, eventLoopQuantiles, postAuthed, startDaemonProcess } from '../utils/hostile-load';
import { ensureTestModels, TINY_LLAMA_SPM, TINY_QWEN2, TINY_QWEN2_TOOLS } from '../utils/models';
import { realAddon } from '../utils/real-addon';

const addon = realAddon();

/** The daemon's event-loop quantile window (LLAMAD_EVENT_LOOP_WINDOW), ms: a scrape covers the last 10-20 s. */
const WINDOW_MS = 20_000;
/**
 * Bound on the longest event-loop delay while models are imported, loaded and reloaded, seconds. Before issue 32 an
 * import decoded the whole tokenizer vocabulary in one go (tiny-qwen2's 151,936 tokens and merges, several times per
 * model: create, facts, memory estimate) and matched its chat template against every library template: this test
 * read a max of 100 ms then, ~45 ms after. Not a speed benchmark: the bound leaves room for a loaded machine, and the
 * p99 must stay under issue 32's 50 ms.
 */
const MAX_DELAY_S = 0.08;
const P99_LIMIT_S = 0.05;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Issue 32 item 2: model imports (a blob upload, `POST /api/create` from a blob and from a server path), first loads,
// reloads on a changed load option and an `options` flood do only I/O on the daemon's event loop. The daemon runs in
// a child process (its loop is not the test's); its llamad_event_loop_delay_seconds is scraped after each phase.
// Start-up is outside every scrape: the first phase begins one window after the daemon answered, and each phase is
// shorter than half a window, so a scrape right after it covers the whole phase.
describe(
  'event loop during model imports, loads and option floods (real addon, daemon in a child process)',
  {
    skip: addon.skip,
  },
  () => {
    let daemon: DaemonProcess | undefined;

    before(async () => {
      ensureTestModels();
      daemon = await startDaemonProcess({ LLAMAD_EVENT_LOOP_WINDOW: `${WINDOW_MS / 1000}s` });
      await sleep(WINDOW_MS + 500);
    });

    after(async () => {
      await daemon?.stop();
    });

    /** Runs one phase, then scrapes the daemon's event-loop quantiles (seconds) and checks them. */
    async function phase(name: string, work: (d: DaemonProcess) => Promise<void>): Promise<void> {
      const from = performance.now();
      await work(daemon!);
      const took = performance.now() - from;
      const res = await fetch(`${daemon!.base}/metrics`, { headers: daemon!.auth, signal: AbortSignal.timeout(5000) });
      assert.equal(res.status, 200);
      const q = eventLoopQuantiles(await res.text());
      const p99 = q.get('0.99') ?? NaN;
      const max = q.get('1') ?? NaN;
      const report = `${name} (${took.toFixed(0)} ms): event-loop p99 ${p99.toFixed(4)} s, max ${max.toFixed(4)} s`;
      console.log(`event-loop-imports: ${report}`);
      assert.ok(p99 < P99_LIMIT_S, report);
      assert.ok(max < MAX_DELAY_S, report);
    }

    it('a blob upload and a create from it (a 150k-token vocabulary) block the loop for no long stretch', async () => {
      const bytes = readFileSync(TINY_QWEN2);
      const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
      await phase('blob upload + create from the blob', async (d) => {
        const upload = await fetch(`${d.base}/api/blobs/${digest}`, { method: 'POST', headers: d.auth, body: bytes });
        assert.equal(upload.status, 201, await upload.text());
        const created = await postAuthed(d, '/api/create', { model: 'from-blob', files: { 'm.gguf': digest } });
        assert.equal(created.status, 200, JSON.stringify(created.json));
      });
    });

    it('creates from server paths and first loads block the loop for no long stretch', async () => {
      await phase('create from paths', async (d) => {
        for (const [name, file] of [
          ['tools', TINY_QWEN2_TOOLS],
          ['spm', TINY_LLAMA_SPM],
        ]) {
          const created = await postAuthed(d, '/api/create', {
            model: name,
            modelfile: `FROM ${file}\n`,
            stream: false,
          });
          assert.equal(created.status, 200, JSON.stringify(created.json));
        }
      });
      await phase('first loads', async (d) => {
        for (const model of ['from-blob', 'tools']) {
          const res = await postAuthed(d, '/api/generate', {
            model,
            prompt: 'hi',
            stream: false,
            options: { num_predict: 1 },
          });
          assert.equal(res.status, 200, JSON.stringify(res.json));
        }
      });
    });

    it('reloads on a changed load option block the loop for no long stretch', async () => {
      await phase('reloads', async (d) => {
        for (const num_ctx of [256, 512, 384]) {
          const res = await postAuthed(d, '/api/generate', {
            model: 'from-blob',
            prompt: 'hi',
            stream: false,
            options: { num_predict: 1, num_ctx },
          });
          assert.equal(res.status, 200, JSON.stringify(res.json));
        }
      });
    });

    it('an options object of 10,000 unknown keys is served, one over the limit is refused before parsing', async () => {
      const options = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
      const atLimit = { model: 'spm', prompt: 'hi', stream: false, options: { ...options(9_999), num_predict: 1 } };
      const over = { model: 'spm', prompt: 'hi', stream: false, options: options(100_000) };
      await phase('options floods', async (d) => {
        const served = await postAuthed(d, '/api/generate', atLimit);
        assert.equal(served.status, 200, JSON.stringify(served.json).slice(0, 300));
        const refused = await postAuthed(d, '/api/generate', over);
        assert.equal(refused.status, 400);
        assert.deepEqual(refused.json, { error: 'request body has an object with more than 10000 members' });
      });
    });
  },
);
