/**
 * The benchmark's settings (command-line flags of `npm run bench`, bench/bench.ts), its fixed sizes and paths, the
 * peers it compares with and the request options both kinds of server get.
 */
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../src/config';
import type { LlamaServerOptions } from './servers';

/** Bytes in a mebibyte. */
export const MiB = 1024 * 1024;
/** Paths: the cache folder, the bench output folder and daemon log, the bench models, the daemon entry point. */
export const CACHE = join(REPO_ROOT, '.cache');
export const OUT_DIR = join(CACHE, 'bench');
export const DAEMON_LOG = join(OUT_DIR, 'daemon.log');
export const MODEL_Q4 = join(CACHE, 'models', 'bench-1b-q4_0.gguf');
export const MODEL_F16 = join(CACHE, 'models', 'bench-1b-f16.gguf');
export const MODEL_BERT = join(CACHE, 'models', 'bench-bert-f16.gguf');
export const MODEL_DRAFT_Q4 = join(CACHE, 'models', 'bench-1b-draft-q4_0.gguf');
/** The agreeing pair of section speculative (scripts/test-model-specs.ts AGREEING_PAIRS.bench), F16. */
export const MODEL_AGREE = join(CACHE, 'models', 'bench-agree-f16.gguf');
export const MODEL_AGREE_DRAFT = join(CACHE, 'models', 'bench-agree-draft-f16.gguf');
/** The blob files the daemon's store holds for both models; llama-server is pointed at the same files. */
export const blobs = { q4: MODEL_Q4, bert: MODEL_BERT };
export const MAIN_JS = join(REPO_ROOT, 'dist', 'src', 'main.js');
/** Sizes in tokens (prompt, decode, multi-turn history, slot contexts, batch) and the embed section's input count. */
export const PROMPT_TOKENS = 512;
export const DECODE_TOKENS = 128;
export const HISTORY_TOKENS = 1500;
export const SLOT_CTX = 4096;
export const STREAM_SLOT_CTX = 1024;
export const BATCH = 512;
export const EMBED_INPUTS = 256;

/** A llama-server build the daemon is compared with. */
export interface Peer {
  /** 'same' (the addon's flags) or 'defaults' (llama.cpp's own defaults). */
  key: string;
  /** Column title. */
  label: string;
  bin: string;
  log: string;
}

/** Who answers a request: the daemon or the peer of that index. */
export type Side = 'ours' | number;

/**
 * The order of the sides in run `r`: rotated per run, so that drift on a shared machine hits every server alike.
 */
export function sidesOf(r: number, peers: readonly Peer[]): Side[] {
  const all: Side[] = ['ours', ...peers.map((_, i) => i)];
  const k = r % all.length;
  return [...all.slice(k), ...all.slice(0, k)];
}

/** Values collected per side. */
export class PerSide<T> {
  readonly ours: T[] = [];
  readonly peers: T[][];
  constructor(n: number) {
    this.peers = Array.from({ length: n }, () => []);
  }
  push(side: Side, ...values: T[]): void {
    (side === 'ours' ? this.ours : this.peers[side]).push(...values);
  }
  of(side: Side): T[] {
    return side === 'ours' ? this.ours : this.peers[side];
  }
}

/**
 * The run's settings from the command line (`--runs`, `--streams`, `--threads`, `--sections`, `--peers`, `--weights`,
 * `--quick`) and LLAMAD_BACKEND.
 */
export interface Settings {
  runs: number;
  streams: number[];
  threads: number;
  sections: Set<string>;
  backend: string;
  gpu: boolean;
  /** Which llama-server builds to compare with: 'same', 'defaults'. */
  peerKeys: string[];
  /**
   * The weights of the model the sections call `bench-1b`: `q4_0` (default) or `f16` (the same model unquantized:
   * 4 × the bytes per token, the f16 rows of docs/benchmarks.md).
   */
  weights: 'q4_0' | 'f16';
}

/** A progress line on stderr (`bench: …`); stdout carries only the final table. */
export function log(msg: string): void {
  process.stderr.write(`bench: ${msg}\n`);
}

/** Parses the command line (node:util parseArgs, strict: an unknown flag throws) into Settings. */
export function settings(): Settings {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string' },
      streams: { type: 'string' },
      threads: { type: 'string' },
      sections: { type: 'string' },
      peers: { type: 'string' },
      weights: { type: 'string' },
      quick: { type: 'boolean', default: false },
    },
  });
  const weights = values.weights ?? 'q4_0';
  if (weights !== 'q4_0' && weights !== 'f16') throw new Error(`--weights ${weights}: expected q4_0 or f16`);
  const backend = (process.env.LLAMAD_BACKEND ?? 'cpu').toLowerCase();
  return {
    runs: Number(values.runs ?? (values.quick ? 2 : 5)),
    streams: (values.streams ?? (values.quick ? '1,8' : '1,4,8,16')).split(',').map(Number),
    threads: Number(values.threads ?? availableParallelism()),
    sections: new Set((values.sections ?? 'single,multiturn,concurrency,embed,tracing,audio').split(',')),
    backend,
    gpu: backend !== 'cpu',
    peerKeys: (values.peers ?? 'same,defaults').split(','),
    weights,
  };
}

/** The GGUF file of the bench's main model (`bench-1b`) for the run's `--weights`. */
export function benchModelFile(s: Pick<Settings, 'weights'>): string {
  return s.weights === 'f16' ? MODEL_F16 : MODEL_Q4;
}

/** Runs a program in the repository root and returns its stdout; throws when it exits non-zero. */
export function sh(cmd: string, args: string[], inherit = true): string {
  const r = spawnSync(cmd, args, {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', inherit ? 'inherit' : 'pipe'],
  });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr ?? ''}`);
  return r.stdout;
}

/** Sampling shared by both servers: Ollama's defaults spelled out for llama-server. */
export function sampling(seed: number): Record<string, number> {
  return { temperature: 0.8, top_k: 40, top_p: 0.9, min_p: 0, repeat_penalty: 1, seed };
}

/** The Ollama `options` of a daemon request: shared sampling, num_ctx/num_predict (tokens), threads, batch, all layers on a GPU. */
export function ollamaOptions(s: Settings, seed: number, numCtx: number, numPredict: number): Record<string, unknown> {
  return {
    options: {
      ...sampling(seed),
      num_ctx: numCtx,
      num_predict: numPredict,
      num_thread: s.threads,
      num_batch: BATCH,
      ...(s.gpu ? { num_gpu: 999 } : {}),
    },
  };
}

/** The body fields of a llama-server /completion request: shared sampling, n_predict (tokens), prompt cache on. */
export function llamaOptions(seed: number, numPredict: number): Record<string, unknown> {
  return { ...sampling(seed), n_predict: numPredict, cache_prompt: true };
}

/** llama-server options for `slots` slots of `slotCtx` tokens each on `model`, with the run's threads and batch. */
export function serverOptions(
  s: Settings,
  model: string,
  slots: number,
  slotCtx: number,
  log: string,
): LlamaServerOptions {
  return {
    bin: '',
    model,
    ctx: slots * slotCtx,
    slots,
    threads: s.threads,
    batch: BATCH,
    ubatch: BATCH,
    gpuLayers: s.gpu ? 999 : 0,
    log,
  };
}
