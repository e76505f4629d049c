import { Ollama } from 'ollama';

/**
 * The server URL the CLI talks to, parsed from OLLAMA_HOST as Ollama's `envconfig.Host()` does: `host`, `host:port`,
 * `scheme://host:port/path`; no scheme → http; `http` default port 80, `https` 443, bare host → 11434; bare
 * `ollama.com` → https:443; an invalid port falls back to the default. 0.0.0.0 / [::] (a bind-all address) is
 * rewritten to loopback for connecting.
 */
export function parseOllamaHost(value: string | undefined): string {
  let s = (value ?? '').trim();
  let scheme = 'http';
  let defaultPort = '11434';
  const cut = s.indexOf('://');
  if (cut < 0) {
    if (s === 'ollama.com') {
      scheme = 'https';
      s = 'ollama.com:443';
    }
  } else {
    scheme = s.slice(0, cut);
    s = s.slice(cut + 3);
    if (scheme === 'http') defaultPort = '80';
    else if (scheme === 'https') defaultPort = '443';
  }
  const slash = s.indexOf('/');
  const hostport = slash < 0 ? s : s.slice(0, slash);
  const path = slash < 0 ? '' : s.slice(slash + 1);
  let host: string;
  let port: string;
  const bracketed = /^\[([^\]]*)\]:(\d*)$/.exec(hostport);
  const plain = /^([^:]*):([^:]*)$/.exec(hostport);
  if (bracketed) {
    host = bracketed[1];
    port = bracketed[2];
  } else if (plain) {
    host = plain[1];
    port = plain[2];
  } else {
    host = hostport === '' ? '127.0.0.1' : hostport.replace(/^\[|\]$/g, '');
    port = defaultPort;
  }
  if (host === '') host = '127.0.0.1';
  const n = Number(port);
  if (!/^\d+$/.test(port) || n > 65535) port = defaultPort;
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::') host = '::1';
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return `${scheme}://${hostPart}:${port}${path ? `/${path}` : ''}`;
}

/** Whether a server URL names this machine (127.0.0.0/8, ::1, localhost): the server can then read local paths. */
export function isLoopbackUrl(url: string): boolean {
  const h = new URL(url).hostname.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\./.test(h);
}

/** Headers for every request: `Authorization: Bearer $LLAMAD_API_KEY` when set. */
export function authHeaders(env: NodeJS.ProcessEnv): Record<string, string> {
  const key = env.LLAMAD_API_KEY?.trim();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

/** The CLI's connection: the base URL and an official `ollama` client on it. */
export interface Connection {
  baseUrl: string;
  headers: Record<string, string>;
  client: Ollama;
}

/** Builds the connection from the environment (OLLAMA_HOST, LLAMAD_API_KEY). */
export function connect(env: NodeJS.ProcessEnv = process.env): Connection {
  const baseUrl = parseOllamaHost(env.OLLAMA_HOST);
  const headers = authHeaders(env);
  return { baseUrl, headers, client: new Ollama({ host: baseUrl, headers }) };
}
