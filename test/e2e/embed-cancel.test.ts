import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeBinding, NativeContext } from '../../binding';
import { SchedulerService } from '../../src/scheduler';
import { ensureTestModels, TINY_BERT } from '../utils/models';
import { postJson } from '../utils/ndjson';
import { realAddon } from '../utils/real-addon';
import { createTestApp, TestApp } from '../utils/test-app';

const addon = realAddon();

/** Resolves once `check()` is true (polled on timers; the test runner's timeout bounds it). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10));
}

// A client that leaves an embedding request frees the engine (issue 15 item 4): the HTTP response's 'close' aborts
// the embed job (Context.cancel → LLAMA_CANCELLED) and releases the runner. Asserted on state: the job's outcome, the
// context's embedJobs and the scheduler's requests in flight, then a following request is served.
describe('embedding requests whose client left', { skip: addon.skip }, () => {
  let t: TestApp;
  const contexts: NativeContext[] = [];
  /** Every embed() the runner started: how it ended ('ok' or the native error code). */
  const outcomes: string[] = [];
  let started = 0;

  before(async () => {
    ensureTestModels();
    const real = addon.binding!;
    // The real addon, with each created context's embed() observed.
    const binding: NativeBinding = {
      ...real,
      Model: real.Model,
      Context: Object.assign(
        function unused() {
          throw new Error('the runner creates contexts with Context.create');
        } as unknown as NativeBinding['Context'],
        {
          create: async (...args: Parameters<NativeBinding['Context']['create']>) => {
            const ctx = await real.Context.create(...args);
            const embed = ctx.embed.bind(ctx);
            // The addon's methods are read-only prototype properties: shadow it on the instance.
            const observed: NativeContext['embed'] = (inputs, onJobId) => {
              started++;
              const p = embed(inputs, onJobId);
              p.then(
                () => outcomes.push('ok'),
                (err: { code?: string }) => outcomes.push(err.code ?? 'error'),
              );
              return p;
            };
            Object.defineProperty(ctx, 'embed', { value: observed });
            contexts.push(ctx);
            return ctx;
          },
        },
      ),
    };
    t = await createTestApp({ binding, config: { numParallel: 1, contextLength: 512 } });
    const res = await postJson(`${t.baseUrl}/api/create`, {
      model: 'bert',
      modelfile: `FROM ${TINY_BERT}`,
      stream: false,
    });
    assert.equal(res.status, 200);
  });

  after(() => t?.close());

  // ~400 inputs of ~500 tokens: far more work than the time it takes to abort once the engine started it.
  const big = Array.from({ length: 400 }, (_, i) => `${i} ${'lorem ipsum dolor sit amet '.repeat(90)}`);

  for (const [path, body] of [
    ['/api/embed', { model: 'bert', input: big }],
    ['/v1/embeddings', { model: 'bert', input: big }],
  ] as const) {
    it(`${path}: aborting the request cancels the embed job and frees the engine`, async () => {
      const before = outcomes.length;
      const startedBefore = started;
      const abort = new AbortController();
      const request = fetch(`${t.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: abort.signal,
      }).catch((err: unknown) => err);
      await until(() => started > startedBefore); // the engine has the job
      abort.abort();
      assert.ok((await request) instanceof Error, 'the client aborted');
      await until(() => outcomes.length > before);
      assert.equal(outcomes[before], 'LLAMA_CANCELLED');
      await until(() => t.app.get(SchedulerService).inFlightCount() === 0);
      for (const ctx of contexts) assert.equal(ctx.stats().embedJobs, 0);
      // the engine serves the next request
      const next = await postJson(`${t.baseUrl}/api/embed`, { model: 'bert', input: ['hello'] });
      assert.equal(next.status, 200);
      assert.equal(((await next.json()) as { embeddings: number[][] }).embeddings.length, 1);
      assert.equal(outcomes.at(-1), 'ok');
    });
  }
});
