import { MAX_ORIGIN_LENGTH, WildcardPattern } from './header-values';

/**
 * Origins every daemon allows, whatever OLLAMA_ORIGINS says (reference/ollama-api.md §1.2, Ollama's
 * envconfig.AllowedOrigins): the localhost family with and without a port, and the schemes of desktop shells and
 * editor webviews.
 */
export const DEFAULT_ALLOWED_ORIGINS: readonly string[] = [
  ...['localhost', '127.0.0.1', '0.0.0.0'].flatMap((host) => [
    `http://${host}`,
    `https://${host}`,
    `http://${host}:*`,
    `https://${host}:*`,
  ]),
  'app://*',
  'file://*',
  'tauri://*',
  'vscode-webview://*',
  'vscode-file://*',
];

/** One allowed-origin entry: an exact origin, or a pattern whose `*` stands for any run of characters. */
type OriginRule = { exact: string } | { pattern: WildcardPattern };

function toRule(entry: string): OriginRule {
  const lower = entry.toLowerCase();
  if (!lower.includes('*')) return { exact: lower };
  return { pattern: new WildcardPattern(lower) };
}

/**
 * Which browser origins may call the daemon (reference/ollama-api.md §1.2, gin-contrib/cors with AllowWildcard):
 * the OLLAMA_ORIGINS entries plus {@link DEFAULT_ALLOWED_ORIGINS}. An entry is an exact origin compared
 * case-insensitively, or a pattern with `*` wildcards (`chrome-extension://*`, `https://*.example.com`); a lone `*`
 * allows every origin. Requests without an Origin header are not a CORS matter and are not judged here.
 */
export class OriginPolicy {
  /** True when OLLAMA_ORIGINS holds a lone `*`: every origin is allowed and `Access-Control-Allow-Origin` is `*`. */
  readonly allowsAll: boolean;
  private readonly exact = new Set<string>();
  private readonly patterns: WildcardPattern[] = [];

  /** @param extraOrigins OLLAMA_ORIGINS entries (already split on commas and trimmed). */
  constructor(extraOrigins: readonly string[]) {
    this.allowsAll = extraOrigins.some((entry) => entry === '*');
    for (const entry of [...extraOrigins, ...DEFAULT_ALLOWED_ORIGINS]) {
      if (entry === '*' || entry === '') continue;
      const rule = toRule(entry);
      if ('exact' in rule) this.exact.add(rule.exact);
      else this.patterns.push(rule.pattern);
    }
  }

  /**
   * Whether a request carrying this `Origin` header value may be served. Linear in the value's length whatever the
   * patterns (no regular expression); a value longer than {@link MAX_ORIGIN_LENGTH} is not allowed unless every
   * origin is.
   */
  allows(origin: string): boolean {
    if (this.allowsAll) return true;
    if (origin.length > MAX_ORIGIN_LENGTH) return false;
    const lower = origin.toLowerCase();
    return this.exact.has(lower) || this.patterns.some((pattern) => pattern.matches(lower));
  }
}
