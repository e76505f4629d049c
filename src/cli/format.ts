/** Ollama's `format.HumanBytes`: decimal units, `%d` from 10 up, one decimal below 10 unless whole. */
export function humanBytes(b: number): string {
  const units: Array<[number, string]> = [
    [1e12, 'TB'],
    [1e9, 'GB'],
    [1e6, 'MB'],
    [1e3, 'KB'],
  ];
  for (const [size, unit] of units) {
    if (b >= size) {
      const value = b / size;
      if (value >= 10 || value === Math.trunc(value)) return `${Math.trunc(value)} ${unit}`;
      return `${value.toFixed(1)} ${unit}`;
    }
  }
  return `${Math.trunc(b)} B`;
}

/** Ollama's `format.humanDuration` (the words of "x minutes ago"). */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < 1) return 'Less than a second';
  if (seconds === 1) return '1 second';
  if (seconds < 60) return `${seconds} seconds`;
  const minutes = Math.trunc(ms / 60000);
  if (minutes === 1) return 'About a minute';
  if (minutes < 60) return `${minutes} minutes`;
  const hours = Math.round(ms / 3600000);
  if (hours === 1) return 'About an hour';
  if (hours < 48) return `${hours} hours`;
  if (hours < 24 * 7 * 2) return `${Math.trunc(hours / 24)} days`;
  if (hours < 24 * 30 * 2) return `${Math.trunc(hours / 24 / 7)} weeks`;
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24 / 30)} months`;
  return `${Math.trunc(ms / 3600000 / 24 / 365)} years`;
}

/** Ollama's `format.HumanTime`: "3 minutes ago", "4 minutes from now", "Forever" (> 20 years ahead), zeroValue. */
export function humanTime(t: Date | string | undefined, zeroValue: string, now = Date.now()): string {
  const d = t === undefined ? undefined : new Date(t);
  if (!d || Number.isNaN(d.getTime()) || d.getTime() <= Date.UTC(1, 0, 1)) return zeroValue;
  const delta = now - d.getTime();
  if (Math.trunc(delta / 3600000 / 24 / 365) < -20) return 'Forever';
  if (delta < 0) return `${humanDuration(-delta)} from now`;
  return `${humanDuration(delta)} ago`;
}

/** Ollama's PROCESSOR column from size and size_vram. */
export function processor(size: number, sizeVram: number): string {
  if (sizeVram === 0) return '100% CPU';
  if (sizeVram === size) return '100% GPU';
  if (sizeVram > size || size === 0) return 'Unknown';
  const cpu = Math.round(((size - sizeVram) / size) * 100);
  return `${cpu}%/${100 - cpu}% CPU/GPU`;
}

/**
 * A borderless table as Ollama's tablewriter renders it (left aligned, no header line, columns separated by four
 * spaces); trailing spaces are trimmed.
 */
export function table(header: string[], rows: string[][], padding = '    '): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map(
      (r) =>
        r
          .map((c, i) => (c ?? '').padEnd(widths[i]))
          .join(padding)
          .trimEnd() + '\n',
    )
    .join('');
}

/** Go's `time.Duration.String()` for a nanosecond count (`1.234567s`, `12.5ms`, `1m2.5s`). */
export function goDuration(nsInput: number): string {
  const ns = Math.round(nsInput);
  if (ns === 0) return '0s';
  const neg = ns < 0;
  const abs = Math.abs(ns);
  const trim = (n: number, digits: number) => n.toFixed(digits).replace(/\.?0+$/, '');
  let out: string;
  if (abs < 1e3) out = `${abs}ns`;
  else if (abs < 1e6) out = `${trim(abs / 1e3, 3)}µs`;
  else if (abs < 1e9) out = `${trim(abs / 1e6, 6)}ms`;
  else {
    const h = Math.trunc(abs / 3.6e12);
    const m = Math.trunc((abs % 3.6e12) / 6e10);
    const s = (abs % 6e10) / 1e9;
    out = `${h > 0 ? `${h}h` : ''}${h > 0 || m > 0 ? `${m}m` : ''}${trim(s, 9)}s`;
  }
  return neg ? `-${out}` : out;
}

/** The `--verbose` timing block Ollama prints after an answer (`api.Metrics.Summary`). */
export interface Metrics {
  total_duration?: number;
  load_duration?: number;
  prompt_eval_count?: number;
  prompt_eval_duration?: number;
  eval_count?: number;
  eval_duration?: number;
}

/** Renders Metrics as Ollama's `Summary()` lines. */
export function metricsSummary(m: Metrics): string {
  let s = '';
  if (m.total_duration && m.total_duration > 0) s += `total duration:       ${goDuration(m.total_duration)}\n`;
  if (m.load_duration && m.load_duration > 0) s += `load duration:        ${goDuration(m.load_duration)}\n`;
  if (m.prompt_eval_count && m.prompt_eval_count > 0) s += `prompt eval count:    ${m.prompt_eval_count} token(s)\n`;
  if (m.prompt_eval_duration && m.prompt_eval_duration > 0) {
    s += `prompt eval duration: ${goDuration(m.prompt_eval_duration)}\n`;
    s += `prompt eval rate:     ${(((m.prompt_eval_count ?? 0) / m.prompt_eval_duration) * 1e9).toFixed(2)} tokens/s\n`;
  }
  if (m.eval_count && m.eval_count > 0) s += `eval count:           ${m.eval_count} token(s)\n`;
  if (m.eval_duration && m.eval_duration > 0) {
    s += `eval duration:        ${goDuration(m.eval_duration)}\n`;
    s += `eval rate:            ${(((m.eval_count ?? 0) / m.eval_duration) * 1e9).toFixed(2)} tokens/s\n`;
  }
  return s;
}
