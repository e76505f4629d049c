import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { freePort } from '../utils/registry-server';
import { createTestApp, TestApp } from '../utils/test-app';

/** Sends raw bytes on a new connection and resolves with everything the server answered until it closed or 2 s. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const done = () => {
      socket.destroy();
      resolvePromise(Buffer.concat(chunks).toString('utf8'));
    };
    const timer = setTimeout(done, 2000);
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      if (/\r\n\r\n/.test(Buffer.concat(chunks).toString('utf8'))) {
        clearTimeout(timer);
        setTimeout(done, 50);
      }
    });
    socket.on('error', reject);
    socket.write(text);
  });
}

function portOf(t: TestApp): number {
  return Number(new URL(t.baseUrl).port);
}

// Issue 23 item 5: request-line and header edge cases of the Origin/Host gate.
describe('gate edge cases (FakeBinding, loopback bind)', () => {
  let t: TestApp;

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding() });
  });

  after(() => t.close());

  it('two Host headers are a 400 (as Go)', async () => {
    const answer = await rawExchange(
      portOf(t),
      'GET /api/tags HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n',
    );
    assert.match(answer, /^HTTP\/1\.1 400 /);
  });

  it('an absolute-form request line is judged by its URL host, not the Host header', async () => {
    const evil = await rawExchange(
      portOf(t),
      'GET http://evil.example/api/tags HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    );
    assert.match(evil, /^HTTP\/1\.1 403 /);
    const local = await rawExchange(
      portOf(t),
      'GET /api/tags HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    );
    assert.match(local, /^HTTP\/1\.1 200 /);
  });
});

async function waitForUp(url: string, deadline: number): Promise<Response> {
  for (;;) {
    try {
      return await fetch(url);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('SIGHUP never ends the daemon (node dist/src/main.js)', () => {
  it('with LLAMAD_API_KEYS and no keys file, SIGHUP leaves it serving', async () => {
    const port = await freePort();
    const models = await mkdtemp(join(tmpdir(), 'llamad-sighup-'));
    const main = resolve(__dirname, '../../src/main.js');
    const child = spawn(process.execPath, [main], {
      env: { ...process.env, OLLAMA_HOST: `127.0.0.1:${port}`, OLLAMA_MODELS: models, LLAMAD_API_KEYS: 'k' },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    let exited: number | null | undefined;
    child.on('exit', (code) => (exited = code));
    try {
      const base = `http://127.0.0.1:${port}`;
      assert.equal((await waitForUp(`${base}/api/version`, Date.now() + 20_000)).status, 200);
      child.kill('SIGHUP');
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(exited, undefined, 'still running');
      const res = await fetch(`${base}/api/tags`, { headers: { authorization: 'Bearer k' } });
      assert.equal(res.status, 200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => (exited !== undefined ? r(undefined) : child.once('exit', r)));
      await rm(models, { recursive: true, force: true });
    }
  });
});
