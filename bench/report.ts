/** The benchmark's result table (rows and notes the sections add) and its Markdown rendering. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../src/config';
import type { Peer } from './settings';
import { fmt, ratio } from './stats';

/** One table row: a metric, our figure and each peer's, how to read the ratio and the target it is held to. */
export interface Row {
  section: string;
  metric: string;
  ours: number;
  /** One figure per peer, in the order of Settings.peers. */
  theirs: number[];
  unit: string;
  digits: number;
  /** 'ratio': ours ÷ theirs; 'delta': ours − theirs (in unit). */
  compare: 'ratio' | 'delta' | 'none';
  target: string;
}

/** The table's rows and the notes under it, in the order the sections add them. */
export const rows: Row[] = [];
export const notes: string[] = [];

/** Adds a row; digits default to 1, compare to ratio, target to none. */
export function row(r: Omit<Row, 'digits' | 'compare' | 'target'> & Partial<Row>): void {
  rows.push({ digits: 1, compare: 'ratio', target: '', ...r });
}

/** The "vs" cell of a row against one peer: the ratio, the signed difference in the row's unit, or empty. */
export function compareCell(r: Row, theirs: number): string {
  if (r.compare === 'ratio') return ratio(r.ours, theirs);
  if (r.compare === 'delta') {
    const d = r.ours - theirs;
    return Number.isFinite(d) ? `${d >= 0 ? '+' : ''}${d.toFixed(r.digits)} ${r.unit}` : 'n/a';
  }
  return '';
}

/** The rows as a Markdown table: daemon, each peer's figure, each comparison and the target. */
export function markdownTable(peers: readonly Peer[]): string {
  const cells = (values: string[]) => `| ${values.join(' | ')} |`;
  const lines = [
    cells(['section', 'metric', 'daemon', ...peers.map((p) => p.label), ...peers.map((p) => `vs ${p.key}`), 'target']),
    cells(['---', '---', '---:', ...peers.flatMap(() => ['---:', '---:']), '---']),
  ];
  for (const r of rows) {
    // A daemon-only row (event loop) has no peer figures: its peer cells stay empty.
    const theirs = peers.map((_, i) => r.theirs[i] ?? NaN);
    lines.push(
      cells([
        r.section,
        r.metric,
        fmt(r.ours, r.digits),
        ...theirs.map((t) => fmt(t, r.digits)),
        ...theirs.map((t) => compareCell(r, t)),
        r.target,
      ]),
    );
  }
  return lines.join('\n');
}

/**
 * The cost of llama.cpp's RPC backend (daemon only): decode of the same model loaded locally and with its layers on
 * two rpc-server workers on loopback (model `bench-1b-rpc`: the same blob with `PARAMETER rpc`), runs interleaved.

/** The addon's ggml switches as `npm install` resolved them (scripts/native-flags.mjs), from its CMake cache. */
export function addonFlags(): string {
  const cache = join(REPO_ROOT, 'build', (process.env.LLAMAD_BACKEND ?? 'cpu').toLowerCase(), 'CMakeCache.txt');
  if (!existsSync(cache)) return 'unknown (no CMake cache)';
  const text = readFileSync(cache, 'utf8');
  return ['GGML_NATIVE', 'GGML_OPENMP', 'GGML_CUDA', 'GGML_VULKAN']
    .map((k) => `${k}=${new RegExp(`^${k}:BOOL=(\\w+)`, 'm').exec(text)?.[1] ?? '?'}`)
    .join(' ');
}
