import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunnerSpec } from '../../../src/runner';
import { sameSpec } from '../../../src/scheduler/scheduler.types';

const spec = (over: Partial<RunnerSpec> = {}): RunnerSpec => ({
  modelPath: '/b/sha256-m',
  numParallel: 1,
  numCtx: 4096,
  numBatch: 512,
  numGpu: -1,
  numThread: 0,
  ...over,
});

describe('sameSpec: the speculative-decoding draft', () => {
  it('treats another draft model as another runner (the draft length is per request)', () => {
    const draft = spec({ draftModelPath: '/b/sha256-d' });
    assert.ok(sameSpec(draft, spec({ draftModelPath: '/b/sha256-d' })));
    assert.ok(!sameSpec(draft, spec()));
    assert.ok(!sameSpec(draft, spec({ draftModelPath: '/b/sha256-e' })));
  });
});
