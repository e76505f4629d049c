import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Fastify, { FastifyInstance } from 'fastify';
import { currentClientGone } from '../../../src/common/http/client-gone';
import { installHttpObservation } from '../../../src/observability';

/** Resolves once `check()` is true, or false after `limitMs` (a bound for a hang, not a timing assertion). */
async function until(check: () => boolean, limitMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return true;
}

// The observation hook tells the handler chain whether its client left (the validation pipe stops between slices of a
// large body when it did): a real server and a real socket, the client aborting its request mid-handler.
describe('HTTP observation: the current request’s client-gone check', () => {
  let app: FastifyInstance;
  let base: string;
  const seen = { started: false, goneAtStart: true, goneLater: undefined as boolean | undefined };

  before(async () => {
    app = Fastify();
    installHttpObservation(app);
    app.post('/slow', async () => {
      seen.goneAtStart = currentClientGone();
      seen.started = true;
      seen.goneLater = await until(() => currentClientGone(), 5000);
      return { ok: true };
    });
    app.get('/quick', () => Promise.resolve({ gone: currentClientGone() }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });

  after(() => app.close());

  it('is false outside a request and while the client waits', async () => {
    assert.equal(currentClientGone(), false);
    const res = await fetch(`${base}/quick`);
    assert.deepEqual(await res.json(), { gone: false });
  });

  it('turns true in the handler once the client aborted its request', async () => {
    const abort = new AbortController();
    const request = fetch(`${base}/slow`, { method: 'POST', body: '{}', signal: abort.signal }).catch(
      (err: unknown) => err,
    );
    await until(() => seen.started);
    assert.equal(seen.goneAtStart, false);
    abort.abort();
    assert.ok((await request) instanceof Error, 'the client aborted');
    await until(() => seen.goneLater !== undefined);
    assert.equal(seen.goneLater, true, 'the handler saw its client gone');
  });
});
