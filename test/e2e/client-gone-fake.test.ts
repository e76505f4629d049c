import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SchedulerService } from '../../src/scheduler';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

/** Resolves once `check()` is true (polled on timers; the test runner's timeout bounds it). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** POSTs `body` and aborts the request once `started()` holds; resolves when the client side is closed. */
async function leaveWhen(url: string, body: unknown, started: () => boolean): Promise<void> {
  const abort = new AbortController();
  const request = fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: abort.signal,
  }).catch((err: unknown) => err);
  await until(started);
  abort.abort();
  assert.ok((await request) instanceof Error, 'the client aborted');
}

// A client that leaves a non-streamed embedding or count_tokens request stops its work (issue 15 item 4), over the
// FakeBinding; asserted on state (the embed job cancelled, nothing rendered for the aborted count), never on time.
describe('requests whose client left (FakeBinding)', () => {
  let t: TestApp;
  const binding = new FakeBinding();

  before(async () => {
    t = await createTestApp({ binding });
    const path = join(t.modelsDir, 'fake.gguf');
    await writeTinyGguf(path, { chatTemplate: '{{ chatml }}' });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'fake', modelfile: `FROM ${path}`, stream: false });
    assert.equal(res.status, 200);
  });

  after(() => t.close());

  for (const path of ['/api/embed', '/api/embeddings', '/v1/embeddings']) {
    it(`${path}: the embed job is cancelled and the runner released`, async () => {
      binding.embedDelayMs = 60_000;
      const calls = binding.embedCalls.length;
      const cancels = binding.cancelled.length;
      const body =
        path === '/api/embeddings' ? { model: 'fake', prompt: 'hello' } : { model: 'fake', input: ['hello'] };
      try {
        await leaveWhen(`${t.baseUrl}${path}`, body, () =>
          binding.contexts.some((c) => c.params.embeddings && c.stats().embedJobs > 0),
        );
        await until(() => t.app.get(SchedulerService).inFlightCount() === 0);
        assert.equal(binding.cancelled.length, cancels + 1, 'context.cancel(jobId) was called');
        for (const c of binding.contexts) assert.equal(c.stats().embedJobs, 0);
        assert.equal(binding.embedCalls.length, calls, 'the cancelled job produced nothing');
      } finally {
        binding.embedDelayMs = 0;
      }
      const next = await postJson(`${t.baseUrl}/api/embed`, { model: 'fake', input: ['again'] });
      assert.equal(next.status, 200);
    });
  }

  it('/v1/messages/count_tokens: a client that leaves while the model loads renders nothing', async () => {
    await postJson(`${t.baseUrl}/api/generate`, { model: 'fake', keep_alive: 0 });
    await until(() => t.app.get(SchedulerService).stats().runners.length === 0);
    binding.loadDelayMs = 300;
    try {
      const renders = binding.renderRequests.length;
      const models = binding.models.length;
      const body = { model: 'fake', messages: [{ role: 'user', content: 'hi' }] };
      await leaveWhen(`${t.baseUrl}/v1/messages/count_tokens`, body, () => binding.models.length > models);
      // A second request waits for the same load; only its own render may happen.
      const res = await postJson(`${t.baseUrl}/v1/messages/count_tokens`, body);
      assert.equal(res.status, 200);
      assert.ok(((await res.json()) as { input_tokens: number }).input_tokens > 0);
      assert.equal(binding.renderRequests.length, renders + 1);
    } finally {
      binding.loadDelayMs = 0;
    }
  });
});
