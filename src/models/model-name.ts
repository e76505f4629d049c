/**
 * A model reference `[scheme://][host/][namespace/]model[:tag]` — Ollama's `types/model/name.go`
 * (reference/ollama-api.md §10.4). Immutable value object; parse with `ModelName.parse()`.
 */

/** Default registry host merged into names that omit one. */
export const DEFAULT_HOST = 'registry.ollama.ai';
/** Default namespace merged into names that omit one. */
export const DEFAULT_NAMESPACE = 'library';
/** Default tag merged into names that omit one. */
export const DEFAULT_TAG = 'latest';

/** Placeholder Ollama puts where a separator has an empty side; it never validates, so the name is invalid. */
const MISSING_PART = '!MISSING!';

const PART_RULES = {
  host: { pattern: /^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/, max: 350 },
  namespace: { pattern: /^[A-Za-z0-9_][A-Za-z0-9_-]*$/, max: 80 },
  model: { pattern: /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, max: 80 },
  tag: { pattern: /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, max: 80 },
} as const;

type PartKind = keyof typeof PART_RULES;

function isValidPart(kind: PartKind, value: string): boolean {
  const rule = PART_RULES[kind];
  return value.length >= 1 && value.length <= rule.max && rule.pattern.test(value);
}

/** Go's cutLast + cutPromised: split at the last `sep`; an empty right side becomes MISSING_PART. */
function cutLastPromised(s: string, sep: string): { before: string; after: string; found: boolean } {
  const i = s.lastIndexOf(sep);
  if (i < 0) return { before: s, after: '', found: false };
  const after = s.slice(i + sep.length);
  return { before: s.slice(0, i), after: after === '' ? MISSING_PART : after, found: true };
}

/** The four parts of a name before defaults are merged (empty string = absent). */
interface NameParts {
  host: string;
  namespace: string;
  model: string;
  tag: string;
}

export class ModelName {
  private constructor(
    /** Registry host, e.g. `registry.ollama.ai` or `hf.co` (may carry a `:port`). */
    readonly host: string,
    /** Namespace (user or organisation), e.g. `library`. */
    readonly namespace: string,
    /** Model name, e.g. `llama3.2`. */
    readonly model: string,
    /** Tag, e.g. `latest`. */
    readonly tag: string,
  ) {}

  /** Go's ParseNameBare: splits right to left without defaults or validation. */
  private static parseBare(input: string): NameParts {
    const parts: NameParts = { host: '', namespace: '', model: '', tag: '' };
    let s = input;
    if (s.lastIndexOf(':') > s.lastIndexOf('/')) {
      const cut = cutLastPromised(s, ':');
      s = cut.before;
      parts.tag = cut.after;
    }
    let cut = cutLastPromised(s, '/');
    if (!cut.found) {
      parts.model = s;
      return parts;
    }
    parts.model = cut.after;
    s = cut.before;
    cut = cutLastPromised(s, '/');
    if (!cut.found) {
      parts.namespace = s;
      return parts;
    }
    parts.namespace = cut.after;
    s = cut.before;
    const scheme = s.indexOf('://');
    parts.host = scheme >= 0 ? s.slice(scheme + 3) : s;
    return parts;
  }

  /**
   * Parses a model reference and merges the defaults (host `registry.ollama.ai`, namespace `library`, tag `latest`).
   * @returns the name, or `null` when any part is invalid (§10.4 table: allowed characters and 1–80/350 lengths;
   *   a separator with an empty side; too many `/`).
   */
  static parse(input: string): ModelName | null {
    const bare = ModelName.parseBare(input);
    const host = bare.host || DEFAULT_HOST;
    const namespace = bare.namespace || DEFAULT_NAMESPACE;
    const tag = bare.tag || DEFAULT_TAG;
    const model = bare.model;
    if (!isValidPart('host', host)) return null;
    if (!isValidPart('namespace', namespace)) return null;
    if (!isValidPart('model', model)) return null;
    if (!isValidPart('tag', tag)) return null;
    return new ModelName(host, namespace, model, tag);
  }

  /** Builds a name from parts that were already validated (e.g. read back from the manifest tree). */
  static fromParts(host: string, namespace: string, model: string, tag: string): ModelName | null {
    if (!isValidPart('host', host) || !isValidPart('namespace', namespace)) return null;
    if (!isValidPart('model', model) || !isValidPart('tag', tag)) return null;
    return new ModelName(host, namespace, model, tag);
  }

  /**
   * Shortest display form (Go's DisplayShortest): `model:tag` for the default host and namespace,
   * `namespace/model:tag` for the default host only, else `host/namespace/model:tag`. The tag is always shown.
   */
  toShortString(): string {
    let prefix = '';
    if (this.host.toLowerCase() !== DEFAULT_HOST) prefix = `${this.host}/${this.namespace}/`;
    else if (this.namespace.toLowerCase() !== DEFAULT_NAMESPACE) prefix = `${this.namespace}/`;
    return `${prefix}${this.model}:${this.tag}`;
  }

  /** Fully qualified form `host/namespace/model:tag` (used in some Ollama error texts). */
  toFullString(): string {
    return `${this.host}/${this.namespace}/${this.model}:${this.tag}`;
  }

  /** Path segments of this name's manifest under `manifests/`: [host, namespace, model, tag]. */
  manifestSegments(): [string, string, string, string] {
    return [this.host, this.namespace, this.model, this.tag];
  }

  /** Case-insensitive equality, the way Ollama compares names. */
  equalsIgnoreCase(other: ModelName): boolean {
    return this.toFullString().toLowerCase() === other.toFullString().toLowerCase();
  }

  toString(): string {
    return this.toShortString();
  }
}
