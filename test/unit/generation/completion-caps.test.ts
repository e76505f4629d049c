import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { ContextLengthExceededError } from '../../../src/common/errors';
import { ChatCommand } from '../../../src/generation/generation.types';
import { RequestContext, requestContextStorage } from '../../../src/observability/request-context';
import type { TenantPolicy } from '../../../src/security';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

const command = (content: string, overrides: Partial<ChatCommand> = {}): ChatCommand => ({
  model: 'm',
  messages: [{ role: 'user', content }],
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

/** Runs `body` as the request of a principal with `policy` (what the authorization hook records). */
function asCaller<T>(policy: TenantPolicy | undefined, body: () => Promise<T>): Promise<T> {
  const context = new RequestContext('r1', 'POST', '/api/chat');
  context.principal = 'key:0123456789ab';
  context.policy = policy;
  return requestContextStorage.run(context, body);
}

const CAPPED: TenantPolicy = { name: 't', role: 'user', limits: { max_context: 1024, max_output_tokens: 3 } };

// Issue 33 item 1: max_context and max_output_tokens of the caller's policy, applied where options are merged.
describe('CompletionService: the caller’s max_context / max_output_tokens', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed();
    await bed.createModel('m', 'PARAMETER num_ctx 8192\n', { chatTemplate: '{{ chatml }}', contextLength: 32768 });
    bed.binding.script = () => ({ pieces: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] });
  });
  afterEach(() => bed.close());

  const run = (cmd: ChatCommand) => lastValueFrom(bed.chat.chat(cmd).pipe(toArray()));
  const loadedCtx = () => bed.scheduler.loaded().map((r) => r.spec.numCtx);

  it('loads with at most max_context and generates at most max_output_tokens', async () => {
    const events = await asCaller(CAPPED, () => run(command('hi', { options: { num_ctx: 16384, num_predict: 100 } })));
    assert.deepEqual(loadedCtx(), [1024]);
    assert.equal(bed.binding.submitted.at(-1)?.nPredict, 3);
    const done = events.at(-1);
    assert.equal(done?.kind === 'done' && done.reason, 'length');
    assert.equal(done?.kind === 'done' && done.metrics?.evalCount, 3);
  });

  it('an unlimited num_predict becomes the cap; a smaller one stays', async () => {
    await asCaller(CAPPED, () => run(command('hi')));
    assert.equal(bed.binding.submitted.at(-1)?.nPredict, 3);
    await asCaller(CAPPED, () => run(command('hi', { options: { num_predict: 2 } })));
    assert.equal(bed.binding.submitted.at(-1)?.nPredict, 2);
  });

  it('without a policy (or outside a request) nothing is capped', async () => {
    await run(command('hi'));
    assert.deepEqual(loadedCtx(), [8192], 'the Modelfile’s num_ctx');
    assert.ok((bed.binding.submitted.at(-1)?.nPredict ?? 0) > 3);
    await asCaller({ role: 'user' }, () => run(command('hi', { options: { num_predict: 5 } })));
    assert.equal(bed.binding.submitted.at(-1)?.nPredict, 5);
  });

  it('a grown context stays within max_context: a prompt beyond it is a 400 naming the key’s cap', async () => {
    const policy: TenantPolicy = { role: 'user', limits: { max_context: 2048 } };
    await assert.rejects(
      asCaller(policy, () => run(command('x'.repeat(3000), { growContext: true }))),
      (err: unknown) => {
        assert.ok(err instanceof ContextLengthExceededError);
        assert.match(err.message, /at most 2048 tokens of context \(the max_context of your API key\)/);
        return true;
      },
    );
    assert.ok(loadedCtx().every((n) => n <= 2048));
  });
});
