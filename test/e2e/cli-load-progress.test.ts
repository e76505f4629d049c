import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, request, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { connect } from '../../src/cli/host';
import { LoadSpinner, SPINNER_FRAMES } from '../../src/cli/load-progress';
import { Session } from '../../src/cli/session';
import { MODEL_EVENTS, ModelEvents } from '../../src/observability';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { CLI } from '../utils/cli';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();
/** util-linux `script` gives the CLI a pseudo-terminal (stdin, stdout and stderr all TTYs). */
const noScript = spawnSync('script', ['--version']).status === 0 ? undefined : 'no util-linux `script` for a pty';

/** Runs the compiled CLI under a pseudo-terminal; resolves with everything the terminal showed. */
function cliInPty(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; screen: string }> {
  const command = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      env: { ...process.env, OLLAMA_NOHISTORY: '1', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    child.stdout.on('data', (d: Buffer) => (screen += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, screen }));
    child.stdin.end();
  });
}

/** The line the spinner leaves behind when it stops: cleared, cursor shown (Ollama's StopAndClear). */
const CLEARED = '\x1b[2K\x1b[1G\x1b[?25h';

/** A stream that records what is written to it; `isTTY` as a terminal's (or a pipe's) stderr says. */
class Capture extends Writable {
  text = '';
  constructor(readonly isTTY: boolean) {
    super();
  }
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

/** Waits (bounded: a hang guard, not a timing assertion) until `cond` holds. */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A loopback proxy to `target` that answers `GET /api/events` with 404, as a daemon without the route (an older
 * llamad, or Ollama) does; it counts the requests for that path.
 */
async function withoutEvents(target: string): Promise<{ server: Server; url: string; eventRequests: () => number }> {
  let eventRequests = 0;
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/api/events')) {
      eventRequests++;
      res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found');
      return;
    }
    const forward = request(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, eventRequests: () => eventRequests };
}

// Issue 36 item 2: `llamad run` shows Ollama's spinner while the model loads, with the load's percentage from
// GET /api/events, on a terminal stderr only; against a daemon without the route it keeps the plain spinner.
describe('llamad run: load progress on the spinner (real daemon)', { skip: addon.skip }, () => {
  let t: TestApp;
  let events: ModelEvents;

  before(async () => {
    ensureTestModels();
    t = await createTestApp({ binding: addon.binding, config: { numParallel: 1 } });
    events = t.app.get<ModelEvents>(MODEL_EVENTS);
    for (const [model, modelfile] of [
      ['tiny', `FROM ${TINY_QWEN2}`],
      // For the CLI runs, which cannot pass num_predict: a short answer.
      ['short', `FROM ${TINY_QWEN2}\nPARAMETER num_predict 4`],
    ]) {
      const res = await postJson(`${t.baseUrl}/api/create`, { model, modelfile });
      assert.equal(res.status, 200);
      await res.text();
    }
  });

  after(() => t?.close());

  it("shows the load percentage of the model's events from /api/events, and only that model's", async () => {
    const err = new Capture(true);
    const spinner = new LoadSpinner(connect({ OLLAMA_HOST: t.baseUrl }), 'tiny', err);
    await spinner.ready;
    assert.ok(err.text.includes(SPINNER_FRAMES[0]), 'the first frame is drawn at once');
    events.publish({ type: 'load.start', model: 'tiny:latest' });
    events.publish({ type: 'load.progress', model: 'other:latest', data: { progress: 0.99 } });
    events.publish({ type: 'load.progress', model: 'tiny:latest', data: { progress: 0.42 } });
    await until(() => err.text.includes('loading model 42% '), 'the 42% frame');
    assert.ok(!err.text.includes('99%'), "another model's progress is not shown");
    events.publish({ type: 'load.ready', model: 'tiny:latest', data: { duration_ns: 1 } });
    const mark = err.text.length;
    await until(() => /\x1b\[1G[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] \x1b\[K/.test(err.text.slice(mark)), 'a plain frame after load.ready');
    spinner.stop();
    assert.ok(err.text.endsWith(CLEARED), 'stop clears the line');
    const stopped = err.text.length;
    await new Promise((r) => setTimeout(r, 250));
    assert.equal(err.text.length, stopped, 'nothing is drawn after stop');
  });

  it('a one-shot run on a terminal: spinner until the first output, then cleared; the answer on stdout', async () => {
    const out = new Capture(true);
    const err = new Capture(true);
    const s = new Session(connect({ OLLAMA_HOST: t.baseUrl }), 'tiny', {}, out, err);
    await s.load('tiny');
    s.options = { num_predict: 3, temperature: 0 };
    await s.generate('hello');
    assert.ok(err.text.startsWith('\x1b[?25l\x1b[1G'), 'the spinner was drawn on stderr');
    assert.ok(err.text.includes(CLEARED), 'and cleared');
    assert.ok(!out.text.includes('\x1b['), 'stdout has no escape codes');
    assert.ok(out.text.endsWith('\n\n'));
  });

  it('a real load: the one-shot run shows the percentages the daemon publishes while the model loads', async () => {
    await postJson(`${t.baseUrl}/api/generate`, { model: 'tiny', keep_alive: 0 }).then((r) => r.text());
    const published: number[] = [];
    const seen = events.stream().subscribe((e) => {
      if (e.type === 'load.progress' && typeof e.data?.progress === 'number') published.push(e.data.progress);
    });
    try {
      const out = new Capture(true);
      const err = new Capture(true);
      const s = new Session(connect({ OLLAMA_HOST: t.baseUrl }), 'tiny', {}, out, err);
      await s.load('tiny');
      s.options = { num_predict: 2 };
      await s.generate('hello');
      assert.ok(published.length > 0, 'the load published progress');
      const shown = [...err.text.matchAll(/loading model (\d+)% /g)].map((m) => Number(m[1]));
      assert.ok(shown.length > 0, `a percentage was drawn: ${JSON.stringify(err.text.slice(0, 300))}`);
      for (const pct of shown) {
        assert.ok(
          published.some((p) => Math.floor(p * 100) === pct),
          `${pct}% is one of the published ${published}`,
        );
      }
      assert.ok(err.text.endsWith(CLEARED));
    } finally {
      seen.unsubscribe();
    }
  });

  it('stderr not a terminal: no spinner and no event stream opened', async () => {
    const proxy = await withoutEvents(t.baseUrl);
    try {
      const out = new Capture(false);
      const err = new Capture(false);
      const s = new Session(connect({ OLLAMA_HOST: proxy.url }), 'tiny', {}, out, err);
      await s.load('tiny');
      s.options = { num_predict: 2 };
      await s.generate('hello');
      assert.equal(err.text, '');
      assert.equal(proxy.eventRequests(), 0);
      assert.ok(out.text.endsWith('\n\n'));
    } finally {
      proxy.server.close();
    }
  });

  it('a daemon without /api/events (404): the plain spinner, and the run works unchanged', async () => {
    await postJson(`${t.baseUrl}/api/generate`, { model: 'tiny', keep_alive: 0 }).then((r) => r.text());
    const proxy = await withoutEvents(t.baseUrl);
    try {
      const out = new Capture(true);
      const err = new Capture(true);
      const s = new Session(connect({ OLLAMA_HOST: proxy.url }), 'tiny', {}, out, err);
      await s.load('tiny');
      s.options = { num_predict: 2 };
      await s.generate('hello');
      assert.equal(proxy.eventRequests(), 1, 'the CLI asked for the events once');
      assert.ok(err.text.includes(SPINNER_FRAMES[0]));
      assert.ok(!err.text.includes('%'), 'no percentage without events');
      assert.ok(err.text.endsWith(CLEARED));
      assert.ok(out.text.endsWith('\n\n'));
    } finally {
      proxy.server.close();
    }
  });

  it(
    '`llamad run short hello` in a terminal (pty): the spinner runs, is cleared, and the answer follows',
    { skip: noScript },
    async () => {
      await postJson(`${t.baseUrl}/api/generate`, { model: 'tiny', keep_alive: 0 }).then((r) => r.text());
      const r = await cliInPty(['run', 'short', 'hello', '--keepalive', '0'], { OLLAMA_HOST: t.baseUrl });
      assert.equal(r.code, 0, r.screen);
      assert.ok(r.screen.includes(`${SPINNER_FRAMES[0]} `), `a spinner frame: ${JSON.stringify(r.screen)}`);
      const cleared = r.screen.indexOf(CLEARED);
      assert.ok(cleared >= 0, 'the spinner line is cleared');
      assert.ok(r.screen.slice(cleared + CLEARED.length).trim().length > 0, 'the answer is printed after it');
    },
  );
});
