// main.ts: a daemon whose stdout/stderr reader went away keeps serving and stays idle (no EPIPE log loop).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { REPO_ROOT } from '../../src/config';
import { TINY_QWEN2, ensureTestModels } from '../utils/models';
import { freePort } from '../utils/registry-server';

ensureTestModels();

/** User + system CPU ticks of a process (/proc/<pid>/stat fields 14 and 15). */
function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

describe('daemon with closed log pipes', () => {
  const store = mkdtempSync(join(tmpdir(), 'llamad-logpipe-'));
  after(() => rmSync(store, { recursive: true, force: true }));

  it('serves a request that logs and then idles without spinning', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'main.js')], {
      env: { ...process.env, OLLAMA_HOST: `127.0.0.1:${port}`, OLLAMA_MODELS: store },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      for (let i = 0; i < 200; i++) {
        const up = await fetch(`${base}/`).then(
          (r) => r.ok,
          () => false,
        );
        if (up) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      // The reader goes away: every later log line hits EPIPE.
      child.stdout.destroy();
      child.stderr.destroy();
      const post = (path: string, body: unknown) =>
        fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
      const created = await post('/api/create', { model: 't', modelfile: `FROM ${TINY_QWEN2}\n`, stream: false });
      assert.equal(created.status, 200);
      // Loading logs a line, unloading (keep_alive 0) another.
      const generated = await post('/api/generate', {
        model: 't',
        prompt: 'hi',
        stream: false,
        keep_alive: 0,
        options: { num_predict: 2 },
      });
      assert.equal(generated.status, 200);
      assert.equal(((await generated.json()) as { done: boolean }).done, true);
      await new Promise((r) => setTimeout(r, 500));
      const before = cpuTicks(child.pid ?? 0);
      await new Promise((r) => setTimeout(r, 2000));
      const used = cpuTicks(child.pid ?? 0) - before;
      // An EPIPE loop keeps one core busy (≈ 130 ticks in 2 s); idle is ≈ 0.
      assert.ok(used < 40, `${used} CPU ticks in 2 s while idle`);
      assert.equal(child.exitCode, null);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
