/**
 * The measurement behind the runner processes' transport (docs/architecture.md "Runner processes"): child_process
 * fork IPC with `serialization: 'advanced'` (structured clone) against `'json'`, on the two message shapes that
 * matter: a one-token event batch with its usage/memory snapshot (ping-pong latency, the per-token cost of a stream)
 * and 16 embeddings of 1024 float32 (64 KiB of floats; Float32Array under 'advanced', number arrays under 'json').
 * Usage: node dist/bench/ipc-transport.js [rounds]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { median, percentile } from './stats';

const TOKEN_BATCH = {
  t: 'events',
  batch: [{ id: 7, event: { kind: 'token', text: ' llama', token: 32_000 } }],
  snapshot: {
    usage: { slotsBusy: 1, queuedTasks: 0, kvCellsTotal: 4096, kvCellsUsed: 513 },
    memory: { totalBytes: 640_000_000, vramBytes: 0, devices: [{ name: 'CPU', bytes: 640_000_000 }] },
  },
};

function child(): void {
  const vectors = Array.from({ length: 16 }, (_, i) => new Float32Array(1024).fill(i + 0.5));
  const json = process.argv.includes('json');
  process.on('message', (m: { kind: string }) => {
    if (m.kind === 'token') process.send!(TOKEN_BATCH);
    else process.send!({ t: 'result', value: json ? vectors.map((v) => Array.from(v)) : vectors });
  });
}

async function roundTrips(c: ChildProcess, kind: string, rounds: number, json: boolean): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    await new Promise<void>((resolve) => {
      c.once('message', (m: { value?: unknown }) => {
        if (kind === 'embed' && json) (m.value as number[][]).map((v) => Float32Array.from(v));
        resolve();
      });
      c.send({ kind });
    });
    times.push((performance.now() - started) * 1000);
  }
  return times;
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 2000);
  for (const serialization of ['advanced', 'json'] as const) {
    const c = fork(__filename, ['child', serialization], { serialization, execArgv: [] });
    await roundTrips(c, 'token', 200, serialization === 'json'); // warm-up
    const token = await roundTrips(c, 'token', rounds, serialization === 'json');
    await roundTrips(c, 'embed', 20, serialization === 'json');
    const embed = await roundTrips(c, 'embed', Math.max(50, rounds / 20), serialization === 'json');
    console.log(
      `${serialization}: token batch round trip p50 ${median(token).toFixed(0)} µs, p99 ` +
        `${percentile(token, 99).toFixed(0)} µs; 16×1024 float32 embeddings p50 ${median(embed).toFixed(0)} µs, ` +
        `p99 ${percentile(embed, 99).toFixed(0)} µs`,
    );
    c.kill();
  }
}

if (process.argv[2] === 'child') child();
else void main();
