import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from '../../src/config';
import type { HostileModels } from './hostile-cases';
import { TINY_LLAMA_SPM, TINY_QWEN2, TINY_QWEN2_TOOLS } from './models';
import { runnersOf } from './processes';
import { freePort } from './registry-server';

/** The API key the hostile-suite daemon requires (benign clients send it; hostile ones may not). */
export const HOSTILE_SUITE_KEY = 'hostile-suite-key';

/**
 * The hostile-suite daemon's event-loop quantile window (LLAMAD_EVENT_LOOP_WINDOW), ms: short, so that a scrape
 * taken this long after the set-up (model imports block the loop for ~150 ms each) covers none of it.
 */
export const HOSTILE_SUITE_WINDOW_MS = 10_000;

/** Origins the hostile-suite daemon allows besides the defaults: several wildcards, for the Origin glob matcher. */
export const HOSTILE_SUITE_ORIGINS = 'http://*a*a*a*a*.example,https://*.*.*.example';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A daemon (`node dist/src/main.js`) in a child process of its own, so its event loop is not the test's. */
export interface DaemonProcess {
  base: string;
  child: ChildProcess;
  /** Headers a benign client sends (the API key). */
  auth: Record<string, string>;
  /** Kills the daemon and its runners (SIGTERM, then SIGKILL after 3 s) and removes its store. */
  stop(): Promise<void>;
}

/**
 * Starts the daemon with its own model store, API keys (HOSTILE_SUITE_KEY), server paths allowed for the key holder,
 * OLLAMA_ORIGINS with wildcards, up to 4 loaded models, one decode thread per model (a 2-core machine keeps a core
 * for the daemon) and a {@link HOSTILE_SUITE_WINDOW_MS} event-loop window. Resolves once /api/version answers.
 * @throws Error when it does not answer within 30 s
 */
export async function startDaemonProcess(env: Record<string, string> = {}): Promise<DaemonProcess> {
  const port = await freePort();
  const store = await mkdtemp(join(tmpdir(), 'llamad-hostile-'));
  const child = spawn(process.execPath, [resolve(REPO_ROOT, 'dist', 'src', 'main.js')], {
    env: {
      ...process.env,
      OLLAMA_HOST: `127.0.0.1:${port}`,
      OLLAMA_MODELS: store,
      OLLAMA_MAX_LOADED_MODELS: '4',
      OLLAMA_KEEP_ALIVE: '10m',
      OLLAMA_ORIGINS: HOSTILE_SUITE_ORIGINS,
      LLAMAD_API_KEYS: HOSTILE_SUITE_KEY,
      LLAMAD_ALLOW_SERVER_PATHS: '1',
      LLAMAD_THREADS: '1',
      LLAMAD_EVENT_LOOP_WINDOW: `${HOSTILE_SUITE_WINDOW_MS / 1000}s`,
      ...env,
    },
    stdio: ['ignore', 'ignore', process.env.LLAMAD_TEST_LOGS === '1' ? 'inherit' : 'ignore'],
  });
  let exited = false;
  child.once('exit', () => (exited = true));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    const pid = child.pid;
    const runners = pid === undefined ? [] : runnersOf(pid);
    if (!exited) child.kill('SIGTERM');
    for (let i = 0; i < 60 && !exited; i++) await sleep(50);
    if (!exited) child.kill('SIGKILL');
    for (const runner of runners) {
      try {
        process.kill(runner, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(store, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`${base}/api/version`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(`daemon did not answer /api/version within 30 s (exited: ${exited})`);
    }
    await sleep(100);
  }
  return { base, child, auth: { authorization: `Bearer ${HOSTILE_SUITE_KEY}` }, stop };
}

/** POSTs JSON with the benign client's key; resolves with the status and the parsed (or raw) body. Bounded. */
export async function postAuthed(
  daemon: DaemonProcess,
  path: string,
  body: unknown,
  timeoutMs = 60_000,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${daemon.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...daemon.auth },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  try {
    return { status: res.status, json: JSON.parse(text) as unknown };
  } catch {
    return { status: res.status, json: text };
  }
}

/**
 * Benign clients: `count` workers, each streaming `/api/generate` (raw prompt, `numPredict` tokens) on `model` again
 * and again until stopped, recording when every chunk arrived. A gap is the time between two consecutive chunks of
 * one stream (the wait for a stream's first chunk is not one).
 */
export class BenignStreams {
  /** [start, end] of every gap between chunks, ms (performance.now()). */
  readonly gaps: Array<[number, number]> = [];
  /** Chunks received, all streams together. */
  chunks = 0;
  /** Streams that ended with an error or a non-200 status (their messages). */
  readonly failures: string[] = [];
  private running = true;
  private readonly abort = new AbortController();
  private workers: Promise<void>[] = [];

  constructor(
    private readonly daemon: DaemonProcess,
    private readonly model: string,
    private readonly numPredict = 300,
  ) {}

  /** Starts the workers; resolves once every one has received its first chunk (bounded: 60 s). */
  async start(count: number): Promise<void> {
    const first: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      let signal!: () => void;
      first.push(new Promise<void>((r) => (signal = r)));
      this.workers.push(this.worker(i, signal));
    }
    await Promise.race([Promise.all(first), sleep(60_000).then(() => Promise.reject(new Error('no first chunk')))]);
  }

  /** The longest gap that overlaps [from, to] (ms), 0 when none. */
  longestGapIn(from: number, to: number): number {
    let longest = 0;
    for (const [start, end] of this.gaps) if (end >= from && start <= to) longest = Math.max(longest, end - start);
    return longest;
  }

  /** Stops every stream (aborts them) and waits for the workers. */
  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort();
    await Promise.allSettled(this.workers);
  }

  /** Notes a failure for an NDJSON line of a benign stream that is not a JSON object or carries an `error`. */
  private checkLine(line: string): void {
    if (line.trim() === '') return;
    try {
      const record = JSON.parse(line) as Record<string, unknown>;
      if ('error' in record) this.failures.push(`error line in a stream: ${line.slice(0, 300)}`);
    } catch {
      this.failures.push(`not a JSON line in a stream: ${line.slice(0, 300)}`);
    }
  }

  private async worker(index: number, firstChunk: () => void): Promise<void> {
    let seed = index;
    while (this.running) {
      try {
        const res = await fetch(`${this.daemon.base}/api/generate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...this.daemon.auth },
          body: JSON.stringify({
            model: this.model,
            prompt: `Story ${seed++}: once upon a time`,
            raw: true,
            stream: true,
            options: { temperature: 0.8, seed, num_predict: this.numPredict },
          }),
          signal: this.abort.signal,
        });
        if (res.status !== 200) {
          this.failures.push(`status ${res.status}: ${(await res.text()).slice(0, 200)}`);
          await sleep(200);
          continue;
        }
        let last = 0;
        // NDJSON lines, read whole: a model may well write the token "error" (`"response":"error"`), so only a
        // line with an `error` field is an error line.
        let pending = '';
        const decoder = new TextDecoder();
        for await (const part of res.body as AsyncIterable<Uint8Array>) {
          const now = performance.now();
          if (last !== 0) this.gaps.push([last, now]);
          else firstChunk();
          last = now;
          this.chunks++;
          const lines = (pending + decoder.decode(part, { stream: true })).split('\n');
          pending = lines.pop() ?? '';
          for (const line of lines) this.checkLine(line);
        }
        this.checkLine(pending);
      } catch (err) {
        if (this.running) this.failures.push((err as Error).message);
      }
    }
  }
}

/** One timed poll of a URL. */
export interface Poll {
  at: number;
  ms: number;
  ok: boolean;
  text?: string;
}

/**
 * Polls a URL every `everyMs` (each poll bounded by `timeoutMs`; a slow answer delays the next poll, so a frozen
 * daemon shows as one long failed poll per timeout).
 */
export class Poller {
  readonly polls: Poll[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(url: string, headers: Record<string, string>, everyMs: number, timeoutMs: number, keepText = false) {
    this.loop = (async () => {
      while (this.running) {
        const at = performance.now();
        let ok = false;
        let text: string | undefined;
        try {
          const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
          text = await res.text();
          ok = res.ok;
        } catch {
          ok = false;
        }
        this.polls.push({ at, ms: performance.now() - at, ok, ...(keepText && text !== undefined ? { text } : {}) });
        await sleep(everyMs);
      }
    })();
  }

  /** The polls that started in [from, to] or were running meanwhile. */
  during(from: number, to: number): Poll[] {
    return this.polls.filter((p) => p.at <= to && p.at + p.ms >= from);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

/** The quantiles of `llamad_event_loop_delay_seconds` in a /metrics text (seconds), keyed by quantile ('0.99'). */
export function eventLoopQuantiles(metrics: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of metrics.split('\n')) {
    const prefix = 'llamad_event_loop_delay_seconds{quantile="';
    if (!line.startsWith(prefix)) continue;
    const close = line.indexOf('"', prefix.length);
    out.set(line.slice(prefix.length, close), Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** What the event-loop metric scrapes of a run say: the largest windowed p99 and max, the median p50 (seconds). */
export function summarizeEventLoop(polls: readonly Poll[]): { p50: number; p99: number; max: number; scrapes: number } {
  const read = polls.filter((p) => p.ok && p.text !== undefined).map((p) => eventLoopQuantiles(p.text!));
  const p50s = read.map((q) => q.get('0.5') ?? NaN).sort((a, b) => a - b);
  return {
    p50: p50s.length ? p50s[Math.floor(p50s.length / 2)] : NaN,
    p99: Math.max(...read.map((q) => q.get('0.99') ?? NaN)),
    max: Math.max(...read.map((q) => q.get('1') ?? NaN)),
    scrapes: read.length,
  };
}

/** The model the benign streams of the hostile suite use. */
export const BENIGN_MODEL = 'tiny-benign';

/**
 * Creates the hostile suite's three models on `daemon` ({@link BENIGN_MODEL} from tiny-qwen2, `models.victim` from
 * tiny-llama-spm, `models.tools` from tiny-qwen2-tools) and loads each with a one-token generate, so that no first
 * load falls in what is measured.
 * @throws Error naming the model and the daemon's answer when a create or a load does not answer 200
 */
export async function createHostileModels(daemon: DaemonProcess, models: HostileModels): Promise<void> {
  for (const [name, file] of [
    [BENIGN_MODEL, TINY_QWEN2],
    [models.victim, TINY_LLAMA_SPM],
    [models.tools, TINY_QWEN2_TOOLS],
  ]) {
    const created = await postAuthed(daemon, '/api/create', {
      model: name,
      modelfile: `FROM ${file}\n`,
      stream: false,
    });
    if (created.status !== 200) throw new Error(`create ${name}: ${JSON.stringify(created.json)}`);
    const warm = await postAuthed(daemon, '/api/generate', {
      model: name,
      prompt: 'hi',
      stream: false,
      options: { num_predict: 1 },
    });
    if (warm.status !== 200) throw new Error(`load ${name}: ${JSON.stringify(warm.json)}`);
  }
}
