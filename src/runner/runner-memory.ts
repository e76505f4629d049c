import type { NativeMemoryEntry } from '../../binding';
import type { RunnerMemory } from './runner';

/** Whether an entry is the CPU's: its device type says so, or (an older addon) its device or buffer name does. */
function isCpu(entry: NativeMemoryEntry): boolean {
  return entry.deviceType !== undefined ? entry.deviceType === 'cpu' : /^CPU/i.test(entry.device || entry.buffer);
}

/**
 * Whether a memory entry's bytes are in this machine's GPU memory (Ollama's `size_vram`): a local (not RPC) buffer of
 * a GPU device ('gpu', 'igpu', or 'meta': GPUs split for tensor parallelism). Not the CPU's extra buffer types
 * (CPU_REPACK, AMX: `host` false, yet in system RAM), nor an accelerator's. Without `deviceType` (an older addon): a
 * non-host buffer of a device that is not the CPU.
 */
export function isVram(entry: NativeMemoryEntry): boolean {
  if (entry.endpoint) return false;
  if (entry.deviceType !== undefined) {
    return !entry.host && (entry.deviceType === 'gpu' || entry.deviceType === 'igpu' || entry.deviceType === 'meta');
  }
  return !entry.host && !isCpu(entry);
}

/**
 * Totals of memory entries (per context: a NativeMemoryEntry list), bytes: all of them, the local GPU part
 * ({@link isVram}) and per device. An RPC worker's buffers are named by their buffer type ('RPC0[127.0.0.1:50052]':
 * the worker's device and endpoint; ggml's own device names RPC<n> are process-wide counters) and are not VRAM here.
 * Host buffers and the CPU's extra buffer types are listed as 'CPU'.
 */
export function sumMemory(perContext: NativeMemoryEntry[][]): RunnerMemory {
  let totalBytes = 0;
  let vramBytes = 0;
  const byDevice = new Map<string, { bytes: number; endpoint?: string }>();
  for (const entry of perContext.flat()) {
    const bytes = entry.model + entry.context + entry.compute;
    totalBytes += bytes;
    const endpoint = entry.endpoint || undefined;
    if (isVram(entry)) vramBytes += bytes;
    const name = endpoint ? entry.buffer : entry.host || isCpu(entry) ? 'CPU' : entry.device || entry.buffer;
    const device = byDevice.get(name) ?? { bytes: 0, ...(endpoint ? { endpoint } : {}) };
    device.bytes += bytes;
    byDevice.set(name, device);
  }
  const devices = [...byDevice].map(([name, device]) => ({ name, ...device })).sort((a, b) => b.bytes - a.bytes);
  return { totalBytes, vramBytes, devices };
}
