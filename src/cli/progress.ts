import { MultiBar, Presets, SingleBar } from 'cli-progress';
import { humanBytes } from './format';

/** One record of a pull/push/create progress stream. */
export interface ProgressRecord {
  status: string;
  digest?: string;
  total?: number;
  completed?: number;
}

/**
 * Renders a progress stream: on a TTY one cli-progress bar per layer (bytes, rate, time left) and status lines above
 * them; otherwise plain lines — each new status once, a layer's line when it starts and when it completes
 * (`pulling 6a0746a1ec1a: 100% 4.7 GB`).
 */
export class ProgressView {
  private readonly multi?: MultiBar;
  private readonly bars = new Map<string, SingleBar>();
  private lastStatus = '';
  private stopped = false;
  private readonly plainDone = new Set<string>();

  constructor(
    private readonly out: NodeJS.WriteStream = process.stderr,
    tty = Boolean(process.stderr.isTTY),
    private readonly opts: ProgressOptions = {},
  ) {
    if (tty) {
      this.multi = new MultiBar(
        {
          stream: out,
          clearOnComplete: false,
          hideCursor: true,
          format: '{status} {percentage}% ▕{bar}▏ {done}/{size} {rate} {left}',
          barsize: 25,
          etaBuffer: 20,
          fps: 10,
        },
        Presets.shades_classic,
      );
    }
  }

  /** Shows one record. */
  update(p: ProgressRecord): void {
    if (p.digest && this.opts.pullLabels) {
      // cmd/cmd.go `pullModelWithProgress`: a layer's first record (completed 0) is skipped; its bar is named
      // `pulling <12 hex>:` after the digest, whatever the status says.
      if (!p.completed) return;
      const hex = p.digest.replace(/^sha256:/, '').trim();
      p = { ...p, status: `pulling ${p.digest.startsWith('sha256:') ? hex.slice(0, 12) : hex}:` };
    }
    if (p.digest && p.total) {
      const completed = p.completed ?? 0;
      if (this.multi) {
        let bar = this.bars.get(p.digest);
        const payload = (v: number) => ({
          status: p.status,
          done: humanBytes(v),
          size: humanBytes(p.total ?? 0),
          rate: '',
          left: '',
        });
        if (!bar) {
          bar = this.multi.create(p.total, completed, payload(completed));
          this.bars.set(p.digest, bar);
          (bar as unknown as { startedAt: number }).startedAt = Date.now();
        }
        const started = (bar as unknown as { startedAt: number }).startedAt;
        const secs = (Date.now() - started) / 1000;
        const perSec = secs > 0.2 ? completed / secs : 0;
        const rate = perSec > 0 ? `${humanBytes(perSec)}/s` : '';
        const left = perSec > 0 && completed < (p.total ?? 0) ? timeLeft(((p.total ?? 0) - completed) / perSec) : '';
        bar.update(completed, { ...payload(completed), rate, left });
        return;
      }
      const key = `${p.status}\0${p.digest}`;
      if (!this.bars.has(key) && !this.plainDone.has(key)) {
        this.plainDone.add(`${key}\0start`);
        this.bars.set(key, undefined as unknown as SingleBar);
        this.out.write(`${label(p.status)} ${humanBytes(p.total)}\n`);
      }
      if (completed >= p.total && !this.plainDone.has(key)) {
        this.plainDone.add(key);
        this.out.write(`${label(p.status)} 100% ${humanBytes(p.total)}\n`);
      }
      return;
    }
    if (p.status === this.lastStatus) return;
    this.lastStatus = p.status;
    // MultiBar.log only prints while bars are drawn: before the first bar, status lines go straight out.
    if (p.status === 'success') this.stop(); // the last line goes below the bars
    if (this.multi && this.bars.size > 0 && !this.stopped) {
      this.multi.log(`${p.status}\n`);
      this.multi.update(); // draws now, which prints the logged line above the bars
    } else {
      this.out.write(`${p.status}\n`);
    }
  }

  /** Stops the bars (leaving them on screen). */
  stop(): void {
    if (this.bars.size > 0 && !this.stopped) this.multi?.stop();
    this.stopped = true;
  }
}

/** A plain line's label: the status and a colon (a pull label has its colon already). */
function label(status: string): string {
  return status.endsWith(':') ? status : `${status}:`;
}

/** Options of a ProgressView. */
export interface ProgressOptions {
  /** Name layer bars `pulling <12 hex>:` and skip their first (0 bytes) record, as `ollama pull`. */
  pullLabels?: boolean;
}

/** Feeds a progress stream into a ProgressView; stops the bars even when the stream fails. */
export async function showProgress(stream: AsyncIterable<ProgressRecord>, view = new ProgressView()): Promise<void> {
  // Ctrl-C: put the terminal back (cursor, line wrap) before leaving; the server keeps what it has written.
  const onInterrupt = () => {
    view.stop();
    process.stderr.write('\n');
    process.exit(130);
  };
  process.once('SIGINT', onInterrupt);
  try {
    for await (const p of stream) view.update(p);
  } finally {
    process.off('SIGINT', onInterrupt);
    view.stop();
  }
}

/** Time left as Ollama shows it: `1h2m`, `3m4s`, `12s`. */
export function timeLeft(seconds: number): string {
  const s = Math.round(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${s}s`;
}
