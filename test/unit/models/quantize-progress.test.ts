import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sameSpec } from '../../../src/scheduler/scheduler.service';
import { estimateQuantizedSize, quantizeCompleted } from '../../../src/models/create-support';

describe('quantization progress estimate', () => {
  it('scales the source size by bits per weight', () => {
    assert.equal(estimateQuantizedSize(1600, 'F16', 'Q8_0'), 850);
    assert.equal(estimateQuantizedSize(1600, 'f16', 'Q4_0'), 450);
    assert.equal(estimateQuantizedSize(3200, 'F32', 'Q4_0'), 450);
    assert.equal(estimateQuantizedSize(1600, 'BF16', 'F16'), 1600);
    assert.equal(estimateQuantizedSize(0, 'F16', 'Q4_0'), 1);
  });

  it('completed is total × output/expected, below total until the quantizer returns', () => {
    assert.equal(quantizeCompleted(0, 450, 1600), 0);
    assert.equal(quantizeCompleted(225, 450, 1600), 800);
    assert.equal(quantizeCompleted(450, 450, 1600), 1599);
    assert.equal(quantizeCompleted(9000, 450, 1600), 1599);
    assert.equal(quantizeCompleted(10, 450, 0), 0);
  });
});

describe('sameSpec with LoRA adapters', () => {
  const base = { modelPath: '/m', numParallel: 1, numCtx: 2048, numBatch: 512, numThread: 0, numGpu: -1 };
  it('adapters are per request: the resident-adapter bound does not make another runner', () => {
    assert.ok(sameSpec(base, { ...base, maxLoras: 2 }));
  });
});
