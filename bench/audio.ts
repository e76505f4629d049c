/**
 * Bench section `audio` (issue 38): prompt processing of one spoken clip through an audio projector, daemon and each
 * llama-server peer side by side, on the same model files: bench-1b with bench-audio-mmproj.gguf (a random
 * Whisper-base-sized qwen2a encoder whose output is bench-1b's width; scripts/test-model-audio.ts).
 *
 * The clip is English speech made by espeak-ng (test/utils/audio-fixtures.ts), about 20 s: mtmd's Whisper preprocessor
 * makes one 30 s chunk of it (750 audio positions), so the prompt is the encoder's pass over that chunk plus bench-1b's
 * prompt evaluation of the 750 embeddings and the chat text around them. One request asks for 1 token:
 * - daemon: `/api/chat` with the clip in the user message's `audio` (base64), `prompt_eval_duration` (ns);
 * - llama-server (`--mmproj`): `/v1/chat/completions` with an `input_audio` part (`{data, format: "wav"}`),
 *   `timings.prompt_ms`, `cache_prompt: false`.
 * Each run starts with a system message naming the run, so no side can reuse a cached prefix that holds the audio.
 * Reported: prompt milliseconds per second of audio (medians over the runs after a warm-up; ratio daemon ÷ peer).
 */
import { basename } from 'node:path';
import { speech, wavSeconds, whisperChunks } from '../test/utils/audio-fixtures';
import { postJson } from './clients';
import { stopServer, type RunningServer } from './servers';
import { PerSide, sidesOf, type Peer } from './settings';
import { fmt, median } from './stats';

/** What the section needs from bench.ts. */
export interface AudioBenchContext {
  runs: number;
  /** The llama-server builds compared with (one server each). */
  peers: readonly Peer[];
  /** The audio projector file (bench-audio-mmproj.gguf): the daemon's model gets it as a second FROM. */
  projector: string;
  /** The daemon's text model to build on (`FROM <name>`). */
  baseModel: string;
  /** Starts the daemon (1 slot). */
  startDaemon(): Promise<RunningServer>;
  /** Starts one llama-server per peer on the same text model with these extra arguments (the projector's). */
  startPeers(extra: string[]): Promise<RunningServer[]>;
  /** The Ollama `options` of a request (seed, num_ctx, num_predict and the run's threads/batch). */
  ollamaOptions(seed: number, numCtx: number, predict: number): Record<string, unknown>;
  /** Adds a row: the daemon's figure and one per peer (NaN where not measured). */
  row(metric: string, ours: number, theirs: number[], unit: string, digits: number, compare: 'ratio' | 'none'): void;
  /** Adds a note under the table. */
  note(text: string): void;
}

const MODEL = 'bench-audio';
/** Slot context (tokens) of both sides: 750 audio positions and the chat text fit. */
export const AUDIO_SLOT_CTX = 2048;
const QUESTION = 'Transcribe the audio.';
/** About 60 words: espeak-ng speaks about 175 words a minute, so about 20 s (one 30 s chunk). */
const SCRIPT =
  'The weather service expects light rain in the morning, clearing by noon, with a gentle breeze from the west. ' +
  'Afternoon temperatures should reach eighteen degrees. The harbour ferry runs on its summer timetable from Monday, ' +
  'leaving every forty minutes until nine in the evening. Visitors are asked to keep their tickets until the end of ' +
  'the journey and to follow the crew at the gangway.';

/** One request's prompt figures as the server reported them. */
interface PromptFigures {
  promptMs: number;
  promptN: number;
}

/** The daemon's `/api/chat` of the clip (1 token); prompt_eval_duration is in nanoseconds. */
async function askDaemon(c: AudioBenchContext, base: string, b64: string, run: number): Promise<PromptFigures> {
  const { json } = await postJson(`${base}/api/chat`, {
    model: MODEL,
    stream: false,
    messages: [
      { role: 'system', content: `Run ${run}.` },
      { role: 'user', content: QUESTION, audio: [b64] },
    ],
    ...c.ollamaOptions(run, AUDIO_SLOT_CTX, 1),
  });
  const r = json as { prompt_eval_duration?: number; prompt_eval_count?: number };
  return { promptMs: (r.prompt_eval_duration ?? NaN) / 1e6, promptN: r.prompt_eval_count ?? NaN };
}

/** llama-server's `/v1/chat/completions` with an `input_audio` part (1 token, no prompt cache). */
async function askLlama(base: string, b64: string, run: number): Promise<PromptFigures> {
  const { json } = await postJson(`${base}/v1/chat/completions`, {
    messages: [
      { role: 'system', content: `Run ${run}.` },
      {
        role: 'user',
        content: [
          { type: 'text', text: QUESTION },
          { type: 'input_audio', input_audio: { data: b64, format: 'wav' } },
        ],
      },
    ],
    max_tokens: 1,
    temperature: 0,
    seed: run,
    cache_prompt: false,
  });
  const t = (json as { timings?: { prompt_ms?: number; prompt_n?: number } }).timings;
  return { promptMs: t?.prompt_ms ?? NaN, promptN: t?.prompt_n ?? NaN };
}

/**
 * Runs the section: creates `bench-audio` (FROM the base model + FROM the projector) on the daemon, starts the peers
 * with `--mmproj`, then per run asks every side once in rotated order; run 0 only warms up.
 */
export async function audioSection(c: AudioBenchContext): Promise<void> {
  const clip = await speech(SCRIPT, 'wav');
  const seconds = wavSeconds(clip);
  const b64 = clip.toString('base64');
  const daemon = await c.startDaemon();
  let peers: RunningServer[] = [];
  try {
    const { json } = await postJson(`${daemon.base}/api/create`, {
      model: MODEL,
      modelfile: `FROM ${c.baseModel}\nFROM ${c.projector}\n`,
      stream: false,
    });
    if ((json as { status?: string }).status !== 'success') throw new Error(`create ${MODEL}: ${JSON.stringify(json)}`);
    peers = await c.startPeers(['--mmproj', c.projector]);
    const peerSides = peers.map((_, i) => i);
    const ms = new PerSide<number>(peers.length);
    const counts = new PerSide<number>(peers.length);
    for (let r = 0; r <= c.runs; r++) {
      for (const side of sidesOf(r, c.peers)) {
        const f = side === 'ours' ? await askDaemon(c, daemon.base, b64, r) : await askLlama(peers[side].base, b64, r);
        if (r === 0) continue; // warm-up: first encoder graph, page cache
        ms.push(side, f.promptMs / seconds);
        counts.push(side, f.promptN);
      }
    }
    c.row(
      `speech clip (${fmt(seconds)} s, ${whisperChunks(seconds)} × 30 s chunk): prompt ms per s of audio`,
      median(ms.ours),
      peerSides.map((i) => median(ms.of(i))),
      'ms/s',
      1,
      'ratio',
    );
    c.note(
      `audio: ${MODEL} = bench-1b + ${basename(c.projector)}; prompt positions counted by each side ` +
        `(encoder output + text): daemon ${fmt(median(counts.ours), 0)}, ` +
        peerSides.map((i) => `${c.peers[i].key} ${fmt(median(counts.of(i)), 0)}`).join(', ') +
        '; prompt time = encoder + text-model evaluation of the audio embeddings (prompt_eval_duration / timings.prompt_ms)',
    );
  } finally {
    await stopServer(daemon);
    for (const p of peers) await stopServer(p);
  }
}
