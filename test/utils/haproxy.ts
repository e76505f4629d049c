import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { missingPrograms, onPath } from './programs';
import { freePort } from './registry-server';

/** Debian installs haproxy in /usr/sbin, which a non-root $PATH may lack. */
const SEARCH_PATH = [process.env.PATH ?? '', '/usr/sbin', '/sbin'].join(delimiter);

/** Why the haproxy tests cannot run here: undefined when `haproxy` is installed, else the install command. */
export function haproxyMissing(): string | undefined {
  return onPath('haproxy', SEARCH_PATH) ? undefined : missingPrograms('haproxy');
}

/** One backend server of {@link startHaproxy}. */
export interface HaproxyServer {
  /** Its name in the configuration, in the `x-llamad-replica` response header and in the stats. */
  name: string;
  port: number;
}

/** A running haproxy in front of daemons on loopback. */
export interface Haproxy {
  /** `http://127.0.0.1:<port>`: the balancer's frontend. */
  base: string;
  /** The configuration it runs (docs/deploy.md "Several replicas" shows the same). */
  config: string;
  /** Each server's state from the stats page: `UP`, `DOWN`, `UP 1/2` (going up), `no check`, … */
  serverStates(): Promise<Record<string, string>>;
  /** Stops the process (SIGTERM, waits for its exit) and removes its configuration; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * The configuration of {@link startHaproxy}: round robin over `servers`, each health-checked with `GET /ready` every
 * `interMs` (one failure takes a server out, two successes bring it back), the serving server's name in an
 * `x-llamad-replica` response header, and the stats page (CSV at `/stats;csv`) on `statsPort`.
 */
export function haproxyConfig(port: number, statsPort: number, servers: HaproxyServer[], interMs = 200): string {
  return [
    'global',
    '  maxconn 256',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 120s',
    '  timeout server 120s',
    'frontend llamad',
    `  bind 127.0.0.1:${port}`,
    '  default_backend replicas',
    'backend replicas',
    '  balance roundrobin',
    '  option httpchk GET /ready',
    '  http-check expect status 200',
    `  default-server check inter ${interMs}ms fall 1 rise 2`,
    '  http-response set-header x-llamad-replica %s',
    ...servers.map((s) => `  server ${s.name} 127.0.0.1:${s.port}`),
    'listen stats',
    `  bind 127.0.0.1:${statsPort}`,
    '  stats enable',
    '  stats uri /stats',
    '',
  ].join('\n');
}

/**
 * Starts Debian's haproxy (`haproxy -db -f <config>`, in the foreground) with {@link haproxyConfig} and waits until its
 * stats page answers and every server is `UP` (at most 20 s).
 * @throws Error with the install command when haproxy is missing, or with its output when it does not come up.
 */
export async function startHaproxy(servers: HaproxyServer[], interMs = 200): Promise<Haproxy> {
  const missing = haproxyMissing();
  if (missing) throw new Error(missing);
  const port = await freePort();
  const statsPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'llamad-haproxy-'));
  const config = haproxyConfig(port, statsPort, servers, interMs);
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, config);
  const child: ChildProcess = spawn('haproxy', ['-db', '-f', file], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PATH: SEARCH_PATH },
  });
  let output = '';
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-4000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const serverStates = async (): Promise<Record<string, string>> => {
    const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text();
    const rows = csv.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    const header = csv.split('\n')[0].replace(/^# /, '').split(',');
    const [px, sv, status] = ['pxname', 'svname', 'status'].map((h) => header.indexOf(h));
    const states: Record<string, string> = {};
    for (const row of rows.map((r) => r.split(','))) {
      if (row[px] === 'replicas' && row[sv] !== 'BACKEND' && row[sv] !== 'FRONTEND') states[row[sv]] = row[status];
    }
    return states;
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    const states = await serverStates().catch(() => ({}) as Record<string, string>);
    if (servers.every((s) => states[s.name] === 'UP')) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`haproxy did not come up (${JSON.stringify(states)}): ${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { base: `http://127.0.0.1:${port}`, config, serverStates, stop };
}
