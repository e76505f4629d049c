import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sumMemory } from '../../../src/runner/runner-memory';

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

  // Issue 32: `llamad ps` printed `90%/10% CPU/GPU` on a machine without a GPU: the CPU's repacked weights
  // (CPU_REPACK, and AMX where the CPU has it) are not host buffers for ggml, yet they are system RAM.
  it('does not count the CPU extra buffer types (CPU_REPACK, AMX) as VRAM', () => {
    const cpu = (buffer: string, host: boolean, model: number) => ({
      buffer,
      device: 'CPU',
      deviceType: 'cpu' as const,
      host,
      endpoint: '',
      model,
      context: 0,
      compute: 0,
    });
    const memory = sumMemory([[cpu('CPU_REPACK', false, 900), cpu('AMX', false, 50), cpu('CPU_Mapped', true, 100)]]);
    assert.deepEqual(memory, { totalBytes: 1050, vramBytes: 0, devices: [{ name: 'CPU', bytes: 1050 }] });
  });

  it('counts GPU and integrated GPU buffers only, by device type', () => {
    const entry = (buffer: string, device: string, deviceType: 'gpu' | 'igpu' | 'accel', host: boolean) => ({
      buffer,
      device,
      deviceType,
      host,
      model: 100,
      context: 10,
      compute: 0,
    });
    const memory = sumMemory([
      [
        entry('Vulkan0', 'Vulkan0', 'gpu', false),
        entry('Vulkan1', 'Vulkan1', 'igpu', false),
        entry('Vulkan_Host', 'Vulkan0', 'gpu', true),
        entry('BLAS', 'BLAS', 'accel', false),
      ],
    ]);
    assert.equal(memory.totalBytes, 440);
    assert.equal(memory.vramBytes, 220);
    assert.deepEqual(
      memory.devices.map((d) => d.name).sort(),
      ['BLAS', 'CPU', 'Vulkan0', 'Vulkan1'],
      'the host buffer of a GPU backend is system RAM: CPU',
    );
  });

  it('without a device type (an older addon), still keeps the CPU repack buffers out of VRAM', () => {
    const memory = sumMemory([
      [
        { buffer: 'CPU_REPACK', device: 'CPU', host: false, model: 900, context: 0, compute: 0 },
        { buffer: 'CUDA0', device: 'CUDA0', host: false, model: 300, context: 0, compute: 0 },
      ],
    ]);
    assert.equal(memory.vramBytes, 300);
    assert.deepEqual(memory.devices, [
      { name: 'CPU', bytes: 900 },
      { name: 'CUDA0', bytes: 300 },
    ]);
  });
});
