/**
 * Ollama's bundled template library (template/template.go `Named`): GGUF Jinja chat templates are matched by
 * Levenshtein distance (< 100, smallest wins, first on ties) against `assets/ollama-templates/index.json`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../config';

/** Directory of the bundled template library. */
export const TEMPLATE_ASSETS_DIR = join(REPO_ROOT, 'assets', 'ollama-templates');

interface IndexEntry {
  name: string;
  template: string;
  cps: number[];
  histogram: Int32Array;
}

let indexCache: IndexEntry[] | null = null;

function loadIndex(): IndexEntry[] {
  if (!indexCache) {
    const raw = JSON.parse(readFileSync(join(TEMPLATE_ASSETS_DIR, 'index.json'), 'utf8')) as {
      name: string;
      template: string;
    }[];
    indexCache = raw.map((e) => {
      const cps = codePoints(e.template);
      return { name: e.name, template: e.template, cps, histogram: histogramOf(cps) };
    });
  }
  return indexCache;
}

function codePoints(s: string): number[] {
  return Array.from(s, (c) => c.codePointAt(0) ?? 0);
}

/** Buckets of {@link histogramOf}: ASCII code points get one each, the others share buckets by their low bits. */
const HISTOGRAM_BUCKETS = 256;

/** How many code points fall in each bucket (see {@link HISTOGRAM_BUCKETS}). */
function histogramOf(cps: number[]): Int32Array {
  const h = new Int32Array(HISTOGRAM_BUCKETS);
  for (const c of cps) h[c < 128 ? c : 128 + (c & 127)]++;
  return h;
}

/**
 * A lower bound of the Levenshtein distance of two strings from their histograms, O(buckets): an edit changes the
 * histograms' L1 distance by at most 2 (a substitution) or 1 (an insertion or deletion), so distance ≥ ⌈L1 / 2⌉
 * (shared buckets only make L1 smaller, so the bound holds).
 */
function histogramBound(a: Int32Array, b: Int32Array): number {
  let l1 = 0;
  for (let i = 0; i < HISTOGRAM_BUCKETS; i++) l1 += Math.abs(a[i] - b[i]);
  return Math.ceil(l1 / 2);
}

/**
 * Levenshtein distance over code points, or `limit` when the distance is >= `limit` (banded computation with early
 * exit, O(n·limit)).
 */
export function boundedLevenshtein(a: number[], b: number[], limit: number): number {
  if (a.length > b.length) [a, b] = [b, a];
  const n = a.length;
  const m = b.length;
  if (m - n >= limit) return limit;
  if (n === 0) return m;
  const INF = limit;
  let prev = new Array<number>(n + 1);
  let cur = new Array<number>(n + 1);
  for (let i = 0; i <= n; i++) prev[i] = i < limit ? i : INF;
  for (let j = 1; j <= m; j++) {
    const lo = Math.max(1, j - limit);
    const hi = Math.min(n, j + limit);
    cur[0] = j < limit ? j : INF;
    if (lo > 1) cur[lo - 1] = INF;
    let rowMin = cur[0];
    const bj = b[j - 1];
    for (let i = lo; i <= hi; i++) {
      const sub = prev[i - 1] + (a[i - 1] === bj ? 0 : 1);
      const del = prev[i] + 1;
      const ins = cur[i - 1] + 1;
      let v = sub < del ? sub : del;
      if (ins < v) v = ins;
      if (v > INF) v = INF;
      cur[i] = v;
      if (v < rowMin) rowMin = v;
    }
    if (hi < n) cur[hi + 1] = INF;
    if (rowMin >= limit) return limit;
    [prev, cur] = [cur, prev];
  }
  return Math.min(prev[n], limit);
}

/** A library template: its name, Go template text and default parameters (the params layer). */
export interface LibraryTemplate {
  name: string;
  template: string;
  parameters: Record<string, unknown>;
}

/** Reads `<name>.gotmpl` and `<name>.json` from the bundled library. @throws if the name is unknown. */
export function loadLibraryTemplate(name: string): LibraryTemplate {
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`invalid template name: ${name}`);
  const template = readFileSync(join(TEMPLATE_ASSETS_DIR, `${name}.gotmpl`), 'utf8');
  let parameters: Record<string, unknown> = {};
  try {
    parameters = JSON.parse(readFileSync(join(TEMPLATE_ASSETS_DIR, `${name}.json`), 'utf8')) as Record<string, unknown>;
  } catch {
    parameters = {};
  }
  return { name, template, parameters };
}

/**
 * Ollama's template autodetection (reference §8.3): the bundled Jinja template nearest to `jinja` by Levenshtein
 * distance, if that distance is < 100; returns its name, Go template and params, or null. Entries whose length or
 * character histogram already put them 100 or more edits away are skipped without computing the distance (the result
 * is the same: such an entry could never win).
 */
export function detectTemplate(jinja: string): LibraryTemplate | null {
  const s = codePoints(jinja);
  const histogram = histogramOf(s);
  let best: IndexEntry | null = null;
  let score = 100;
  for (const e of loadIndex()) {
    // Entries that cannot come within `score` are skipped in O(length) instead of O(length × 100): the banded
    // distance to each of the ~40 library templates was ~40 ms of event-loop time per create.
    if (Math.abs(s.length - e.cps.length) >= score || histogramBound(histogram, e.histogram) >= score) continue;
    const d = boundedLevenshtein(s, e.cps, score);
    if (d < score) {
      score = d;
      best = e;
      if (d === 0) break;
    }
  }
  return best ? loadLibraryTemplate(best.name) : null;
}
