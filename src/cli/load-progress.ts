import { createParser } from 'eventsource-parser';
import type { Connection } from './host';

/** Ollama's spinner frames (progress/spinner.go), one per {@link SPINNER_INTERVAL_MS}. */
export const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** How often the spinner redraws, ms (Ollama's progress ticker: 100 ms). */
export const SPINNER_INTERVAL_MS = 100;

/** Longest wait for the event stream to open before the request is sent anyway, ms. */
export const EVENTS_OPEN_TIMEOUT_MS = 1_000;

/** What a waiting indicator offers its user: stop it (and clear its line). Idempotent. */
export interface WaitIndicator {
  stop(): void;
}

/**
 * Ollama's spinner (progress/spinner.go, progress/progress.go): one line on a terminal, redrawn every 100 ms as
 * `[message ]<frame> ` with the cursor hidden, cleared when stopped (Ollama's StopAndClear). The message is
 * `loading model NN%` while a load reports progress (see {@link LoadSpinner}), else empty.
 */
export class Spinner implements WaitIndicator {
  private frame = 0;
  private message = '';
  private readonly timer: NodeJS.Timeout;
  private stopped = false;

  /** @param out a terminal (the caller checks `isTTY`). Draws the first frame at once. */
  constructor(private readonly out: NodeJS.WritableStream) {
    this.draw();
    this.timer = setInterval(() => {
      this.frame = (this.frame + 1) % SPINNER_FRAMES.length;
      this.draw();
    }, SPINNER_INTERVAL_MS);
    this.timer.unref();
  }

  /**
   * Sets the text before the frame; `''` for none. Drawn at once (Ollama draws on its ticks only): a load shorter
   * than a tick still shows its percentage.
   */
  setMessage(message: string): void {
    if (message === this.message) return;
    this.message = message;
    this.draw();
  }

  /** Stops the ticker and clears the line (cursor shown again). */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    this.out.write('\x1b[2K\x1b[1G\x1b[?25h');
  }

  private draw(): void {
    if (this.stopped) return;
    const text = `${this.message ? `${this.message} ` : ''}${SPINNER_FRAMES[this.frame]} `;
    // Hide the cursor, back to column 1, the line, clear to its end (as Ollama's renderLocked).
    this.out.write(`\x1b[?25l\x1b[1G${text}\x1b[K`);
  }
}

/** The load progress of one event, in [0, 1]; undefined when the event is not `load.progress` or is malformed. */
export function loadProgressOf(event: string | undefined, data: string): number | undefined {
  if (event !== 'load.progress') return undefined;
  try {
    const progress = (JSON.parse(data) as { progress?: unknown }).progress;
    return typeof progress === 'number' && progress >= 0 && progress <= 1 ? progress : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A spinner that follows the model's load on `GET /api/events?model=<model>` (issue 36; beyond Ollama, whose CLI
 * shows a bare spinner): `load.progress` sets `loading model NN%`, `load.ready` / `load.failed` clear it. A server
 * without the route (404 from an older daemon or Ollama), a refused key or a broken stream leaves the plain spinner;
 * nothing here ever fails the command.
 */
export class LoadSpinner implements WaitIndicator {
  private readonly spinner: Spinner;
  private readonly abort = new AbortController();
  /**
   * Resolves once the event stream is open (its headers arrived), or has failed, or after
   * {@link EVENTS_OPEN_TIMEOUT_MS}: a request sent after it cannot load before the stream sees the load.
   */
  readonly ready: Promise<void>;

  constructor(conn: Connection, model: string, out: NodeJS.WritableStream) {
    this.spinner = new Spinner(out);
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, EVENTS_OPEN_TIMEOUT_MS).unref());
    this.ready = Promise.race([open, timeout]);
    void this.follow(conn, model, opened).finally(opened);
  }

  /** Stops the spinner (clearing its line) and closes the event stream. */
  stop(): void {
    this.abort.abort();
    this.spinner.stop();
  }

  private async follow(conn: Connection, model: string, opened: () => void): Promise<void> {
    try {
      const url = `${conn.baseUrl}/api/events?model=${encodeURIComponent(model)}`;
      const res = await fetch(url, {
        headers: { ...conn.headers, accept: 'text/event-stream' },
        signal: this.abort.signal,
      });
      opened();
      if (!res.ok || !res.body) {
        await res.body?.cancel();
        return;
      }
      const parser = createParser({
        onEvent: (e) => {
          if (e.event === 'load.ready' || e.event === 'load.failed' || e.event === 'load.start') {
            this.spinner.setMessage('');
            return;
          }
          const progress = loadProgressOf(e.event, e.data);
          if (progress !== undefined) this.spinner.setMessage(`loading model ${Math.floor(progress * 100)}%`);
        },
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        parser.feed(decoder.decode(chunk, { stream: true }));
      }
    } catch {
      // Aborted by stop(), or the server went away: the plain spinner (or nothing) is all that is lost.
    }
  }
}

/**
 * Starts the waiting indicator of `llamad run` while a request loads the model and waits for its first token, as
 * Ollama's CLI does (cmd/cmd.go: a spinner until the first response) — only when `out` is a terminal (no escape
 * codes into a pipe or a file, and no event stream opened); with the load's percentage from /api/events when the
 * server has it.
 * @returns the indicator and a promise to await before sending the request (resolved at once without a terminal).
 */
export function startLoadIndicator(
  conn: Connection,
  model: string,
  out: NodeJS.WritableStream,
): { indicator?: WaitIndicator; ready: Promise<void> } {
  if (!(out as NodeJS.WriteStream).isTTY) return { ready: Promise.resolve() };
  const spinner = new LoadSpinner(conn, model, out);
  return { indicator: spinner, ready: spinner.ready };
}
