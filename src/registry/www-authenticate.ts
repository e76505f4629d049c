/**
 * `WWW-Authenticate` challenge parsing (RFC 7235 auth-params; the registry token flow of reference/ollama-api.md
 * §6.2 and the Docker/OCI distribution auth spec).
 */

/** A parsed challenge. Scheme is lower-cased; parameter names are lower-cased, values unquoted. */
export interface AuthChallenge {
  scheme: 'bearer' | 'basic' | string;
  params: Record<string, string>;
}

/**
 * Parses the FIRST challenge of a `WWW-Authenticate` header value, e.g.
 * `Bearer realm="https://auth.example/token",service="registry",scope="repository:ns/m:pull,push"` or
 * `Basic realm="Registry Realm"`. Quoted values may contain commas and `\"` escapes.
 * @returns null for an empty or unparsable header.
 */
export function parseWwwAuthenticate(header: string | null | undefined): AuthChallenge | null {
  if (!header) return null;
  const m = /^\s*([A-Za-z][A-Za-z0-9_-]*)\s*(.*)$/s.exec(header);
  if (!m) return null;
  const scheme = m[1].toLowerCase();
  const params: Record<string, string> = {};
  const re = /\s*([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))\s*(?:,|$)/gy;
  const rest = m[2];
  let match: RegExpExecArray | null;
  while (re.lastIndex < rest.length && (match = re.exec(rest)) !== null) {
    const value = match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : (match[3] ?? '');
    params[match[1].toLowerCase()] = value;
    if (match[0] === '') break;
  }
  return { scheme, params };
}
