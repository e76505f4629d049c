import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { ChatResponse, GenerateResponse, Message, ShowResponse } from 'ollama';
import { CliError, isAbortError } from './errors';
import { startLoadIndicator, WaitIndicator } from './load-progress';
import { metricsSummary } from './format';
import { Connection } from './host';

/** Options of `llamad run`. */
export interface RunOptions {
  format?: string;
  verbose?: boolean;
  think?: boolean | string;
  hidethinking?: boolean;
  keepalive?: string;
  nowordwrap?: boolean;
  interactive?: boolean;
  /** Pull a missing model from an insecure (http) registry. */
  insecure?: boolean;
  /** Embedding models: truncate inputs longer than the context (sent only when given). */
  truncate?: boolean;
  /** Embedding models: output dimensions (sent when > 0). */
  dimensions?: number;
}

type Think = boolean | 'high' | 'medium' | 'low' | 'max' | undefined;

/** Go's `%q` for a string (close to JSON's quoting for the text a flag holds). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

/**
 * Parses `--think[=true|false|high|medium|low|max]` as cmd/cmd.go `RunHandler`: no value or `true` → true, `false`
 * → false, a level as given; anything else is `invalid value for --think: "…" (must be true, false, high, medium,
 * low, or max)`. Undefined (flag not given) stays undefined.
 */
export function parseThink(v: boolean | string | undefined): Think {
  if (v === undefined) return undefined;
  if (v === true || v === 'true' || v === '') return true;
  if (v === false || v === 'false') return false;
  if (v === 'high' || v === 'medium' || v === 'low' || v === 'max') return v;
  throw new CliError(
    `invalid value for --think: ${goQuote(String(v))} (must be true, false, high, medium, low, or max)`,
  );
}

/**
 * cmd/cmd.go `inferThinkingOption`: a value the user set is kept; otherwise a model with the `thinking` capability
 * thinks (`true`) and any other model gets no `think` field at all.
 */
export function inferThink(explicit: Think, capabilities: string[]): Think {
  if (explicit !== undefined) return explicit;
  return capabilities.includes('thinking') ? true : undefined;
}

/**
 * The `format` field of a request, as cmd/cmd.go `generate`/`chat` send `--format`: `json` as the string "json";
 * any other text as raw JSON (a schema goes out as an object), or as the string itself when it is not JSON.
 */
export function requestFormat(format: string | undefined): string | object | undefined {
  if (!format) return undefined;
  if (format === 'json') return 'json';
  try {
    return JSON.parse(format) as object;
  } catch {
    return format;
  }
}

/** Values of `/set parameter`: numbers and booleans typed, `stop` a list. */
export function parseParameter(name: string, values: string[]): unknown {
  if (name === 'stop') return values;
  const v = values.join(' ');
  if (v === 'true' || v === 'false') return v === 'true';
  const n = Number(v);
  return v !== '' && Number.isFinite(n) ? n : v;
}

/**
 * Finds image and audio file paths in a prompt (words ending .png/.jpg/.jpeg or .wav, optionally quoted, `\ `
 * escapes allowed) that exist; returns the prompt without them and the files' bytes, as Ollama's `extractFileData`
 * (which sends audio files as images too: the daemon tells them apart by their bytes).
 */
export function extractImages(prompt: string): { prompt: string; images: Uint8Array[]; paths: string[] } {
  const re = /(?:"([^"]+\.(?:png|jpe?g|wav))"|'([^']+\.(?:png|jpe?g|wav))'|((?:[^\s\\]|\\ )+\.(?:png|jpe?g|wav)))/gi;
  const images: Uint8Array[] = [];
  const paths: string[] = [];
  const rest = prompt.replace(re, (whole, q1?: string, q2?: string, bare?: string) => {
    let p = (q1 ?? q2 ?? bare ?? '').replace(/\\ /g, ' ');
    if (p.startsWith('~/')) p = join(homedir(), p.slice(2));
    try {
      if (existsSync(p) && statSync(p).isFile()) {
        images.push(readFileSync(p));
        paths.push(p);
        return '';
      }
    } catch {
      // unreadable: keep the text
    }
    return whole;
  });
  return { prompt: images.length > 0 ? rest.trim() : prompt, images, paths };
}

/**
 * Streams text with Ollama's word wrap: a word that would cross `width` columns starts a new line. `width` 0 passes
 * text through unchanged (no terminal, or --nowordwrap).
 */
export class WordWrapper {
  private col = 0;
  private word = '';

  constructor(
    private readonly write: (s: string) => void,
    private readonly width: number,
  ) {}

  /** Writes a piece of the stream (any length; words may be split across pieces). */
  put(text: string): void {
    if (this.width <= 0) {
      this.write(text);
      return;
    }
    for (const ch of text) {
      if (ch === '\n') {
        this.flush();
        this.write('\n');
        this.col = 0;
      } else if (ch === ' ') {
        this.flush();
        if (this.col < this.width) {
          this.write(' ');
          this.col++;
        }
      } else {
        this.word += ch;
        if (this.word.length >= this.width) this.flush();
      }
    }
  }

  /** Prints the pending word. */
  flush(): void {
    if (!this.word) return;
    if (this.col > 0 && this.col + this.word.length > this.width) {
      this.write('\n');
      this.col = 0;
    }
    this.write(this.word);
    this.col += this.word.length;
    this.word = '';
  }
}

/** State of one `run` session. */
export class Session {
  messages: Message[] = [];
  system?: string;
  options: Record<string, unknown> = {};
  format?: string;
  verbose: boolean;
  think: Think;
  /** The think value the user chose (flag or /set think|nothink); undefined lets the model's capabilities decide. */
  thinkSet: Think;
  hideThinking: boolean;
  wordWrap: boolean;
  keepAlive?: string;
  info!: ShowResponse;
  current?: { abort(): void };
  /**
   * Starts the indicator shown while a request waits for its first output (the model may be loading): Ollama's
   * spinner on a terminal, with the load's percentage from /api/events (load-progress.ts); nothing otherwise.
   */
  startWaiting: () => { indicator?: WaitIndicator; ready: Promise<void> };

  constructor(
    readonly conn: Connection,
    public model: string,
    opts: RunOptions,
    readonly out: NodeJS.WritableStream = process.stdout,
    readonly err: NodeJS.WritableStream = process.stderr,
  ) {
    this.format = opts.format;
    this.verbose = Boolean(opts.verbose);
    this.think = parseThink(opts.think);
    this.thinkSet = this.think;
    this.hideThinking = Boolean(opts.hidethinking);
    this.wordWrap = !opts.nowordwrap;
    this.keepAlive = opts.keepalive;
    this.startWaiting = () => startLoadIndicator(this.conn, this.model, this.err);
  }

  get capabilities(): string[] {
    return (this.info as unknown as { capabilities?: string[] }).capabilities ?? [];
  }

  /** Loads the model's info; a missing model or an unreachable server ends the command. */
  async load(model: string): Promise<void> {
    this.info = await this.conn.client.show({ model });
    this.model = model;
    this.think = inferThink(this.thinkSet, this.capabilities);
  }

  private thinkingPrinter() {
    let inThinking = false;
    const tty = this.out as NodeJS.WriteStream;
    const width = tty.isTTY && this.wordWrap ? (tty.columns ?? 0) - 5 : 0;
    const ww = new WordWrapper((s) => this.out.write(s), width);
    const w = { write: (s: string) => ww.put(s), flush: () => ww.flush() };
    let thought = '';
    return {
      thinking: (t: string | undefined) => {
        if (!t || this.hideThinking) return;
        if (!inThinking) {
          w.write('Thinking...\n');
          inThinking = true;
        }
        thought += t;
        w.write(t);
      },
      content: (c: string) => {
        if (inThinking && c) {
          w.write(thought.endsWith('\n') ? '...done thinking.\n\n' : '\n...done thinking.\n\n');
          inThinking = false;
        }
        w.write(c);
      },
      flush: () => w.flush(),
    };
  }

  private imagesFor(prompt: string): { prompt: string; images?: Uint8Array[] } {
    if (!this.capabilities.includes('vision') && !this.capabilities.includes('audio')) return { prompt };
    const r = extractImages(prompt);
    for (const p of r.paths) this.out.write(`Added image '${p}'\n`);
    return r.images.length > 0 ? { prompt: r.prompt, images: r.images } : { prompt };
  }

  /** One-shot: POST /api/generate, streamed. */
  async generate(rawPrompt: string): Promise<void> {
    const { prompt, images } = this.imagesFor(rawPrompt);
    const waiting = this.startWaiting();
    const p = this.thinkingPrinter();
    let last: GenerateResponse | undefined;
    try {
      await waiting.ready;
      const stream = await this.conn.client.generate({
        model: this.model,
        prompt,
        images,
        stream: true,
        ...(this.system !== undefined ? { system: this.system } : {}),
        ...(this.format ? { format: requestFormat(this.format) } : {}),
        ...(this.think !== undefined ? { think: this.think } : {}),
        ...(this.keepAlive !== undefined ? { keep_alive: this.keepAlive } : {}),
        options: this.options,
      } as Parameters<typeof this.conn.client.generate>[0] & { stream: true });
      this.current = stream;
      for await (const part of stream) {
        waiting.indicator?.stop();
        p.thinking(part.thinking);
        p.content(part.response ?? '');
        last = part;
      }
    } finally {
      waiting.indicator?.stop();
      p.flush();
      this.current = undefined;
    }
    // cmd/cmd.go `generate`: two newlines after the answer to a prompt.
    if (prompt !== '') this.out.write('\n\n');
    if (this.verbose && last) this.err.write(metricsSummary(last));
  }

  /** One REPL turn: POST /api/chat with the conversation, streamed; Ctrl-C aborts it and drops the turn. */
  async chat(rawPrompt: string): Promise<void> {
    const { prompt, images } = this.imagesFor(rawPrompt);
    const user: Message = { role: 'user', content: prompt, ...(images ? { images } : {}) };
    const messages: Message[] = [
      ...(this.system !== undefined ? [{ role: 'system', content: this.system }] : []),
      ...this.messages,
      user,
    ];
    const p = this.thinkingPrinter();
    let content = '';
    let last: ChatResponse | undefined;
    const waiting = this.startWaiting();
    try {
      await waiting.ready;
      const stream = await this.conn.client.chat({
        model: this.model,
        messages,
        stream: true,
        ...(this.format ? { format: requestFormat(this.format) } : {}),
        ...(this.think !== undefined ? { think: this.think } : {}),
        ...(this.keepAlive !== undefined ? { keep_alive: this.keepAlive } : {}),
        options: this.options,
      } as Parameters<typeof this.conn.client.chat>[0] & { stream: true });
      this.current = stream;
      for await (const part of stream) {
        waiting.indicator?.stop();
        p.thinking(part.message.thinking);
        p.content(part.message.content ?? '');
        content += part.message.content ?? '';
        last = part;
      }
    } catch (err) {
      if (isAbortError(err)) {
        this.out.write('\n');
        return;
      }
      throw err;
    } finally {
      waiting.indicator?.stop();
      p.flush();
      this.current = undefined;
    }
    this.out.write('\n\n');
    this.messages.push(user, { role: 'assistant', content });
    if (this.verbose && last) this.err.write(metricsSummary(last));
  }
}
