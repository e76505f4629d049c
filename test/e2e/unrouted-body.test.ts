import { Controller, Module, Post } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LlamadModule, NATIVE_BINDING } from '../../src';
import { FakeBinding } from '../utils/fake-binding';
import { listenHost } from '../utils/host';
import { sendSlowBody } from '../utils/slow-body';
import { createTestApp, TestApp } from '../utils/test-app';

/** Most body bytes a server may have read from one connection whose 50 MB body it refused: a few socket buffers. */
const READ_ALLOWANCE = 4 * 1024 * 1024;

/** Records every connection's socket, to read how many bytes the server took off it. */
function trackSockets(app: NestFastifyApplication): Socket[] {
  const sockets: Socket[] = [];
  app.getHttpServer().on('connection', (socket: Socket) => sockets.push(socket));
  return sockets;
}

/** Resolves once every tracked socket is closed (bounded: 5 s). */
async function allClosed(sockets: Socket[]): Promise<void> {
  const deadline = Date.now() + 5000;
  while (sockets.some((s) => !s.destroyed) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

// Issue 32 item 1: a request that matches no route (unknown path, or known path with another method) is answered from
// an onRequest hook, before its body is read; the connection is closed rather than drained. A 50 MB body streamed
// slowly (64 KiB every 20 ms: about 16 s in all) must get its answer within the first few chunks.
describe('unknown routes and wrong methods answer before the body (daemon)', () => {
  let t: TestApp;
  let sockets: Socket[];

  before(async () => {
    t = await createTestApp({ binding: new FakeBinding() });
    sockets = trackSockets(t.app);
  });

  after(() => t.close());

  const cases = [
    { method: 'PUT', path: '/api/chat', status: 405, text: '405 method not allowed' },
    { method: 'POST', path: '/api/no-such-route', status: 404, text: '404 page not found' },
    { method: 'DELETE', path: '/api/generate', status: 405, text: '405 method not allowed' },
    { method: 'POST', path: '/v1/no-such-route', status: 404, text: undefined },
  ];

  for (const c of cases) {
    for (const chunked of [false, true]) {
      it(`${c.method} ${c.path} with a 50 MB ${chunked ? 'chunked ' : ''}body: ${c.status} at once`, async () => {
        // The reference answer: the same request without a body (nothing to read there).
        const reference = await fetch(`${t.baseUrl}${c.path}`, { method: c.method });
        const referenceText = await reference.text();
        assert.equal(reference.status, c.status);
        if (c.text !== undefined) assert.equal(referenceText, c.text);

        const before = sockets.length;
        const answer = await sendSlowBody(`${t.baseUrl}${c.path}`, { method: c.method, chunked });
        assert.equal(answer.status, c.status);
        assert.equal(answer.body, referenceText, 'same body as without a request body');
        assert.equal(answer.headers.connection, 'close', 'the unread body is not drained: the connection closes');
        assert.ok(
          answer.sentBeforeAnswer <= 2 * 1024 * 1024,
          `answered after ${answer.sentBeforeAnswer} of ${answer.announced} body bytes`,
        );
        const mine = sockets.slice(before);
        await allClosed(mine);
        for (const socket of mine) {
          assert.ok(socket.destroyed, 'the server closed the connection');
          assert.ok(socket.bytesRead < READ_ALLOWANCE, `the server read ${socket.bytesRead} bytes`);
        }
      });
    }
  }

  it('a bodiless request to an unknown route keeps its keep-alive connection', async () => {
    const res = await fetch(`${t.baseUrl}/api/no-such-route`);
    assert.equal(res.status, 404);
    assert.notEqual(res.headers.get('connection'), 'close');
    assert.equal(await res.text(), '404 page not found');
  });

  it('a routed request with a body is still read and parsed (the hook passes it on)', async () => {
    const res = await fetch(`${t.baseUrl}/api/show`, { method: 'POST', body: '{"model":"nope"}' });
    assert.equal(res.status, 404);
    assert.match(await res.text(), /not found/);
    const bad = await fetch(`${t.baseUrl}/api/show`, { method: 'POST', body: '{"model":' });
    assert.equal(bad.status, 400);
  });
});

@Controller('host')
class HostController {
  @Post('echo')
  echo(): { ok: boolean } {
    return { ok: true };
  }
}

// The same inside a host application (LlamadModule): under the module's paths the host's own not-found handler
// answers before the body is read (the host's 1 MB body limit would otherwise answer 413 first); the host's own
// unmatched paths keep the host's full lifecycle.
describe('unknown routes under the module answer before the body (host application)', () => {
  let app: NestFastifyApplication;
  let base: string;
  let modelsDir: string;

  before(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), 'llamad-unrouted-host-'));
    @Module({
      imports: [
        LlamadModule.forRoot({
          config: { modelsDir },
          providers: [{ provide: NATIVE_BINDING, useValue: () => new FakeBinding() }],
        }),
      ],
      controllers: [HostController],
    })
    class HostModule {}
    ({ app, base } = await listenHost(HostModule));
  });

  after(async () => {
    await app?.close();
    await rm(modelsDir, { recursive: true, force: true });
  });

  for (const path of ['/api/chat', '/v1/chat/completions', '/api/no-such-route']) {
    it(`PUT ${path} with a 50 MB chunked body: the host's 404, at once`, async () => {
      const reference = await fetch(`${base}${path}`, { method: 'PUT' });
      const referenceText = await reference.text();
      const answer = await sendSlowBody(`${base}${path}`, { method: 'PUT', chunked: true });
      assert.equal(answer.status, reference.status);
      assert.equal(answer.body, referenceText);
      assert.ok(answer.sentBeforeAnswer <= 512 * 1024, `answered after ${answer.sentBeforeAnswer} body bytes`);
    });
  }
});
