import { isIP } from 'node:net';
import { InvalidConfigError } from '../common/errors';

/*
 * LLAMAD_METRICS_ADDR (issue 34 item 2; beyond Ollama): a second listener that serves GET /metrics only, without API
 * keys, for scrapers inside the cluster network that cannot send a bearer token (the inference gateway's endpoint
 * picker supports mTLS only; docs/security.md "Metrics listener"). Parsed by loadConfig (daemon-config.ts) into
 * DaemonConfig.metricsAddr; served by src/operations/metrics/metrics-listener.ts.
 */

/** Where the metrics listener binds. */
export interface MetricsAddress {
  /** IP or host name; '' = every interface (`:9464`). IPv6 without brackets. */
  host: string;
  /** TCP port; 0 picks a free one (tests). */
  port: number;
}

/**
 * Parses LLAMAD_METRICS_ADDR (already trimmed): `host:port`, `:port` (every interface) or `[v6]:port`.
 * @returns undefined when unset (no second listener).
 * @throws InvalidConfigError for anything else (no port, a port outside 0–65535, a scheme or a path), so that a typo
 *   fails the start-up instead of leaving the scraper without metrics.
 */
export function parseMetricsAddrEnv(raw: string): MetricsAddress | undefined {
  if (raw === '') return undefined;
  const usage = 'LLAMAD_METRICS_ADDR must be host:port (0.0.0.0:9464, 127.0.0.1:9464, [::]:9464 or :9464)';
  const match = /^(?:\[([^\]]*)\]|([^:[\]/]*)):(\d{1,5})$/.exec(raw);
  if (!match) throw new InvalidConfigError(`${usage}, not ${JSON.stringify(raw)}`);
  const host = match[1] ?? match[2];
  const port = Number(match[3]);
  if (port > 65535) throw new InvalidConfigError(`${usage}: port ${port} is out of range`);
  if (match[1] !== undefined && isIP(host) !== 6) {
    throw new InvalidConfigError(`${usage}: [${host}] is not an IPv6 address`);
  }
  return { host, port };
}
