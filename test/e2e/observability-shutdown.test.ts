// The daemon as a subprocess (`node dist/src/main.js`): JSON log lines on stdout with the x-request-id sent, and
// graceful shutdown on SIGTERM — a stream in flight finishes (done record) and the process exits 0; past
// LLAMAD_SHUTDOWN_TIMEOUT a stream ends with the dialect's error line, still exit 0; with LLAMAD_DRAIN_DELAY /ready
// answers 503 `shutting down` at once while requests are still served, then the listener closes.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DaemonProcess, spawnDaemon } from '../utils/daemon-process';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { realAddon } from '../utils/real-addon';

const addon = realAddon();

/** The daemon as a subprocess (test/utils/daemon-process.ts) with model `t` (tiny-qwen2) created in its store. */
async function startDaemon(store: string, env: Record<string, string> = {}): Promise<DaemonProcess> {
  const daemon = await spawnDaemon(store, env);
  const created = await fetch(`${daemon.base}/api/create`, {
    method: 'POST',
    body: JSON.stringify({ model: 't', modelfile: `FROM ${TINY_QWEN2}\n`, stream: false }),
  });
  assert.equal(created.status, 200);
  return daemon;
}

/** Starts a streamed /api/generate and resolves once its first line arrived; `rest` reads the remaining lines. */
async function startStream(base: string, requestId: string, numPredict: number) {
  const res = await fetch(`${base}/api/generate`, {
    method: 'POST',
    headers: { 'x-request-id': requestId },
    body: JSON.stringify({ model: 't', prompt: 'Tell a long story', options: { num_predict: numPredict } }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-request-id'), requestId);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('\n')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  const rest = async (): Promise<Array<Record<string, unknown>>> => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    return text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  return rest;
}

describe('daemon subprocess: logs and graceful shutdown', { skip: addon.skip }, () => {
  const store = mkdtempSync(join(tmpdir(), 'llamad-shutdown-'));
  after(() => rmSync(store, { recursive: true, force: true }));
  ensureTestModels();

  it(
    'SIGTERM during a stream: no new connections, the stream finishes, exit 0; JSON logs with the request id',
    { timeout: 90_000 },
    async () => {
      const d = await startDaemon(store);
      try {
        const rest = await startStream(d.base, 'sigterm-stream-1', 100);
        d.child.kill('SIGTERM');
        await new Promise((r) => setTimeout(r, 300));
        // A new connection is refused; a request on a kept-alive one would get 503 `server is shutting down`.
        const refused = await new Promise<string>((resolve) => {
          const socket = connect(Number(new URL(d.base).port), '127.0.0.1');
          socket.once('connect', () => {
            socket.destroy();
            resolve('connected');
          });
          socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
        });
        const kept = await fetch(`${d.base}/health`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.status,
          () => 'refused',
        );
        const chunks = await rest();
        const last = chunks.at(-1)!;
        assert.equal(last.done, true, JSON.stringify(last));
        assert.equal(last.done_reason, 'length');
        assert.equal(last.eval_count, 100);
        assert.ok(chunks.slice(0, -1).every((c) => c.done === false && c.error === undefined));
        assert.equal(refused, 'ECONNREFUSED', 'the listening socket is closed while draining');
        assert.ok(kept === 503 || kept === 'refused', String(kept));
        const exit = await d.exited;
        assert.deepEqual(exit, { code: 0, signal: null });

        const records = d.lines.map((l) => JSON.parse(l) as Record<string, unknown>); // every line is JSON
        const line = records.find((r) => r.reqId === 'sigterm-stream-1' && r.msg === 'request completed');
        assert.ok(line, d.lines.join('\n'));
        assert.equal(line.route, '/api/generate');
        assert.equal(line.status, 200);
        assert.equal(line.model, 't:latest');
        assert.equal(line.completionTokens, 100);
        assert.equal(line.doneReason, 'length');
        const messages = records.map((r) => r.msg);
        assert.ok(messages.includes('SIGTERM: shutting down'), messages.join('\n'));
        assert.ok(
          messages.some((m) => typeof m === 'string' && m.startsWith('unloading ')),
          'models unloaded',
        );
        assert.equal(messages.at(-1), 'stopped');
      } finally {
        d.child.kill('SIGKILL');
      }
    },
  );

  it(
    'past LLAMAD_SHUTDOWN_TIMEOUT a stream ends with its error line and the process still exits 0',
    { timeout: 90_000 },
    async () => {
      const d = await startDaemon(store, { LLAMAD_SHUTDOWN_TIMEOUT: '300ms' });
      try {
        const rest = await startStream(d.base, 'sigterm-stream-2', 1500);
        const signalled = Date.now();
        d.child.kill('SIGTERM');
        const chunks = await rest();
        assert.deepEqual(chunks.at(-1), { error: 'server is shutting down' });
        const exit = await d.exited;
        assert.deepEqual(exit, { code: 0, signal: null });
        assert.ok(Date.now() - signalled < 15_000, 'ended at the timeout, not after 1500 tokens');
        const records = d.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
        const line = records.find((r) => r.reqId === 'sigterm-stream-2' && r.msg === 'request completed');
        assert.equal(line?.error, 'server is shutting down');
      } finally {
        d.child.kill('SIGKILL');
      }
    },
  );

  it(
    'LLAMAD_DRAIN_DELAY: /ready answers 503 `shutting down` at once, requests are still served, then the listener closes',
    { timeout: 90_000 },
    async () => {
      const d = await startDaemon(store, { LLAMAD_DRAIN_DELAY: '3s' });
      try {
        assert.equal((await fetch(`${d.base}/ready`)).status, 200);
        d.child.kill('SIGTERM');
        let ready: Response | undefined;
        for (let i = 0; i < 100; i++) {
          ready = await fetch(`${d.base}/ready`);
          if (ready.status === 503) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        assert.equal(ready?.status, 503);
        assert.deepEqual(await ready.json(), { status: 'unavailable', error: 'shutting down' });
        // Still accepting (new connections too) during the delay.
        const tags = await fetch(`${d.base}/api/tags`, { headers: { connection: 'close' } });
        assert.equal(tags.status, 200);
        const gen = await fetch(`${d.base}/api/generate`, {
          method: 'POST',
          body: JSON.stringify({ model: 't', prompt: 'hi', stream: false, options: { num_predict: 4 } }),
        });
        assert.equal(gen.status, 200);
        assert.equal(((await gen.json()) as { done: boolean }).done, true);
        const exit = await d.exited;
        assert.deepEqual(exit, { code: 0, signal: null });
        const messages = d.lines.map((l) => (JSON.parse(l) as { msg?: string }).msg);
        assert.ok(
          messages.some((m) => m?.startsWith('not ready; still accepting requests for 3000 ms')),
          messages.join('\n'),
        );
      } finally {
        d.child.kill('SIGKILL');
      }
    },
  );
});
