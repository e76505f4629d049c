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

  it('lists each RPC worker device by its buffer type and does not count it as VRAM', () => {
    const rpc = (buffer: string, device: string, endpoint: string, model: number) => ({
      buffer,
      device,
      host: false,
      endpoint,
      model,
      context: 10,
      compute: 0,
    });
    const memory = sumMemory([
      [
        rpc('RPC0[10.0.0.2:50052]', 'RPC0', '10.0.0.2:50052', 500),
        rpc('RPC0[10.0.0.3:50052]', 'RPC1', '10.0.0.3:50052', 300),
        { buffer: 'CPU', device: 'CPU', host: true, endpoint: '', model: 100, context: 0, compute: 5 },
      ],
    ]);
    assert.deepEqual(memory, {
      totalBytes: 925,
      vramBytes: 0,
      devices: [
        { name: 'RPC0[10.0.0.2:50052]', bytes: 510, endpoint: '10.0.0.2:50052' },
        { name: 'RPC0[10.0.0.3:50052]', bytes: 310, endpoint: '10.0.0.3:50052' },
        { name: 'CPU', bytes: 105 },
      ],
    });
  });
});
