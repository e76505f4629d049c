import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sumMemory } from '../../../src/runner/llama.runner';

describe('sumMemory', () => {
  it('splits host and device bytes and groups them per device, largest first', () => {
    const memory = sumMemory([
      [
        { buffer: 'CPU_Mapped', device: 'CPU', host: true, model: 100, context: 0, compute: 0 },
        { buffer: 'CUDA0', device: 'CUDA0', host: false, model: 1000, context: 300, compute: 50 },
        { buffer: 'CUDA_Host', device: 'CUDA0', host: true, model: 0, context: 0, compute: 20 },
      ],
      [{ buffer: 'CUDA0', device: 'CUDA0', host: false, model: 0, context: 40, compute: 10 }],
    ]);
    assert.deepEqual(memory, {
      totalBytes: 1520,
      vramBytes: 1400,
      devices: [
        { name: 'CUDA0', bytes: 1400 },
        { name: 'CPU', bytes: 120 },
      ],
    });
  });

  it('is all host memory on a CPU build', () => {
    const memory = sumMemory([[{ buffer: 'CPU', device: 'CPU', host: true, model: 10, context: 5, compute: 1 }]]);
    assert.equal(memory.vramBytes, 0);
    assert.equal(memory.totalBytes, 16);
  });
});
