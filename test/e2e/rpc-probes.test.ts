import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT } from '../../src/config';
import { freePort } from '../utils/registry-server';
import { RPC_SERVER, RPC_SKIP } from '../utils/rpc-workers';

// Issue 32: the rpc overlay's tcpSocket liveness probe connected to a single-client rpc-server (listen backlog 1) and
// restarted workers that were in use. The probes are exec probes now; this runs their command against a real
// rpc-server, on the test's port, while a client holds the worker.

const MANIFEST = join(REPO_ROOT, 'deploy', 'k8s', 'rpc', 'rpc-workers.yaml');
const MANIFEST_PORT = 50052;

/** The `command:` of each exec probe in the manifest (YAML single-quoted flow sequences), and the probe blocks. */
function probes(text: string): { name: string; body: string; command: string[] }[] {
  const out: { name: string; body: string; command: string[] }[] = [];
  const re = /^( *)(readinessProbe|livenessProbe|startupProbe):\n((?:\1 {2}.*\n)+)/gm;
  for (const m of text.matchAll(re)) {
    const flow = /command: \[(.*)\]/.exec(m[3])?.[1] ?? '';
    const command = [...flow.matchAll(/'((?:[^']|'')*)'/g)].map((q) => q[1].replace(/''/g, "'"));
    out.push({ name: m[2], body: m[3], command });
  }
  return out;
}

/** Runs a probe command with the manifest's port replaced by `port`; its exit status. */
function runProbe(command: string[], port: number): number | null {
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');
  const [file, ...args] = command.map((a) => a.replaceAll(`:${hex(MANIFEST_PORT)} `, `:${hex(port)} `));
  return spawnSync(file, args, { stdio: 'ignore' }).status;
}

function connected(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

describe('rpc workers: probes that do not connect to rpc-server', { skip: RPC_SKIP }, () => {
  let worker: ChildProcess | undefined;
  let port = 0;
  let stdout = '';
  const manifest = readFileSync(MANIFEST, 'utf8');

  before(async () => {
    port = await freePort();
    worker = spawn(RPC_SERVER as string, ['--host', '127.0.0.1', '--port', String(port), '--threads', '1'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    // Its start-up lines may sit in stdio's buffer; "Accepted client connection" is flushed at once.
    worker.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  });
  after(() => {
    worker?.kill('SIGKILL');
  });

  it('has exec readiness and liveness probes and no TCP/HTTP probe', () => {
    assert.match(manifest, new RegExp(`containerPort: ${MANIFEST_PORT}\\b`));
    const found = probes(manifest);
    assert.deepEqual(found.map((p) => p.name).sort(), ['livenessProbe', 'readinessProbe']);
    for (const probe of found) {
      assert.doesNotMatch(probe.body, /tcpSocket|httpGet|grpc/, probe.name);
      assert.equal(probe.command[0], '/bin/sh', `${probe.name}: ${probe.body}`);
    }
  });

  it('succeed while rpc-server listens, also while a client holds it, without a connection of their own', async () => {
    const commands = probes(manifest).map((p) => p.command);
    let deadline = Date.now() + 10_000;
    while (runProbe(commands[0], port) !== 0) {
      assert.ok(Date.now() < deadline, 'the probe never saw the listening socket');
      await new Promise((r) => setTimeout(r, 50));
    }
    const accepted = () => stdout.split('Accepted client connection').length - 1;
    const client = await connected(port);
    deadline = Date.now() + 5_000;
    while (accepted() < 1) {
      assert.ok(Date.now() < deadline, 'rpc-server did not accept the test client');
      await new Promise((r) => setTimeout(r, 20));
    }
    // Held by a client: each probe, several times over (a TCP probe would fill the backlog of 1 here).
    for (let i = 0; i < 3; i++) for (const command of commands) assert.equal(runProbe(command, port), 0);
    client.destroy();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(accepted(), 1, 'only the test client connected: the probes opened no connection');
  });

  it('fail once rpc-server is gone', async () => {
    const exited = new Promise((resolve) => worker?.once('exit', resolve));
    worker?.kill('SIGKILL');
    await exited;
    for (const command of probes(manifest).map((p) => p.command)) assert.equal(runProbe(command, port), 1);
  });
});
