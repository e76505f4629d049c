/** One sample of a Prometheus text exposition. */
export interface PromSample {
  /** The sample's name (a histogram's `_bucket`, `_sum`, `_count` included). */
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** One metric family: its `# TYPE`, `# HELP` and samples. */
export interface PromFamily {
  type?: string;
  help?: string;
  samples: PromSample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})?\\s+(\\S+)(?:\\s+-?\\d+)?$`);
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)/y;

/** Parses `{a="x",b="y"}`'s inside; label values unescaped (`\\`, `\"`, `\n`). @throws Error when malformed. */
function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const m = LABEL.exec(text);
    if (!m) throw new Error(`malformed labels: ${line}`);
    labels[m[1]] = m[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    if (m[3] === '') break;
  }
  return labels;
}

/** The family a sample belongs to: its name, or the name without `_bucket`/`_sum`/`_count` when that family exists. */
function familyOf(name: string, families: Map<string, PromFamily>): string {
  if (families.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count|total|created)$/, '');
  return families.has(base) ? base : name;
}

/**
 * Parses the Prometheus text exposition format 0.0.4 (what prom-client writes for GET /metrics): families by name,
 * each with its TYPE, HELP and samples. Values are numbers (`NaN`, `+Inf`, `-Inf` included).
 * @throws Error naming the first line that is neither a comment nor a well-formed sample.
 */
export function parsePrometheusText(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { samples: [] }));
    return f;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^#\s+(TYPE|HELP)\s+(\S+)\s*(.*)$/.exec(line);
    if (meta) {
      if (meta[1] === 'TYPE') family(meta[2]).type = meta[3];
      else family(meta[2]).help = meta[3];
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`malformed sample: ${line}`);
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && m[3] !== 'NaN') throw new Error(`malformed value: ${line}`);
    family(familyOf(m[1], families)).samples.push({ name: m[1], labels: parseLabels(m[2] ?? '', line), value });
  }
  return families;
}
