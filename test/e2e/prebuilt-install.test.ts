import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT } from '../../src/config';
import { prebuiltPackageName } from '../../src/native/addon-candidates';
import { ensureTestModels, TINY_QWEN2 } from '../utils/models';
import { runnersOf } from '../utils/processes';

// Issue 24, "Done when": the no-compile install. In an empty folder, npm (with its defaults: install scripts as npm
// decides, nothing approved) installs the packed main package and the prebuilt linux-x64 package, whose peer
// dependencies npm adds from the registry (or its cache); then the installed `llamad serve` loads the addon from
// @llamad/linux-x64 — no build/ and no vendor/llama.cpp anywhere — and generates tokens in its runner process.
// The tarballs come from `npm run pack:all` (build/packages, or LLAMAD_PACKAGES_DIR); CI makes them once per run and
// sets LLAMAD_REQUIRE_PREBUILT=1, under which their absence fails instead of skipping.

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const PACKAGES_DIR = process.env.LLAMAD_PACKAGES_DIR ?? join(REPO_ROOT, 'build', 'packages');
const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const CPU_PACKAGE = prebuiltPackageName(process.platform, process.arch, 'cpu');

/** The two tarballs, or why they are not there. */
function tarballs(): { main: string; cpu: string } | string {
  const main = join(PACKAGES_DIR, `llamad-${VERSION}.tgz`);
  const cpu = join(PACKAGES_DIR, `${CPU_PACKAGE.slice(1).replace('/', '-')}-${VERSION}.tgz`);
  const missing = [main, cpu].filter((f) => !existsSync(f));
  return missing.length === 0 ? { main, cpu } : `not packed (npm run pack:all): ${missing.join(', ')}`;
}

/** The environment of a user's shell: none of the npm_* variables `npm test` set, none of the addon overrides. */
function userEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) && !/^npm_config_(cache|registry)$/i.test(k)) continue;
    if (['LLAMAD_ADDON', 'LLAMAD_BACKEND', 'LLAMAD_RPC_SERVER'].includes(k)) continue;
    env[k] = v;
  }
  return { ...env, npm_config_update_notifier: 'false', ...extra };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const packed = tarballs();
const required = process.env.LLAMAD_REQUIRE_PREBUILT === '1';
const skip = typeof packed === 'string' && !required ? packed : undefined;

describe('prebuilt install: no compiler, npm defaults', { skip }, () => {
  let dir: string;
  let hostDir: string;
  let daemon: ChildProcess | undefined;
  let output = '';
  let base = '';

  before(async () => {
    if (typeof packed === 'string') throw new Error(`LLAMAD_REQUIRE_PREBUILT=1 but ${packed}`);
    ensureTestModels();
    dir = mkdtempSync(join(tmpdir(), 'llamad-prebuilt-'));
    hostDir = join(dir, 'host');
    spawnSync('mkdir', [hostDir]);
    writeFileSync(join(hostDir, 'package.json'), JSON.stringify({ name: 'host', version: '1.0.0', private: true }));
    const flags = ['install', '--no-audit', '--no-fund', '--loglevel=error', packed.main, packed.cpu];
    let r = spawnSync(NPM, [...flags, '--offline'], { cwd: hostDir, encoding: 'utf8', env: userEnv() });
    if (r.status !== 0) {
      r = spawnSync(NPM, [...flags, '--prefer-offline'], { cwd: hostDir, encoding: 'utf8', env: userEnv() });
    }
    assert.equal(r.status, 0, `npm install failed:\n${r.stdout}${r.stderr}`);

    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    daemon = spawn(join(hostDir, 'node_modules', '.bin', 'llamad'), ['serve'], {
      cwd: hostDir,
      env: userEnv({
        OLLAMA_HOST: `127.0.0.1:${port}`,
        OLLAMA_MODELS: join(dir, 'models'),
        OLLAMA_CONTEXT_LENGTH: '512',
        HOME: dir,
        NO_COLOR: '1',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    daemon.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    daemon.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    for (let i = 0; i < 300 && !/listening on/.test(output); i++) {
      if (daemon.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(output, /listening on/, `the installed daemon did not start:\n${output}`);
  });

  after(() => {
    daemon?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('installed without compiling: no build/ or vendor/llama.cpp in the package, the addon in the platform package', () => {
    const installed = join(hostDir, 'node_modules', 'llamad');
    assert.ok(existsSync(join(installed, 'dist', 'src', 'index.js')));
    assert.ok(!existsSync(join(installed, 'build')), 'node_modules/llamad/build exists: something compiled');
    assert.ok(!existsSync(join(installed, 'vendor', 'llama.cpp')), 'vendor/llama.cpp was fetched');
    const bin = join(hostDir, 'node_modules', CPU_PACKAGE, 'bin');
    const files = readdirSync(bin);
    assert.ok(files.includes('llamad.node') && files.includes('rpc-server'), files.join(' '));
    // One package for every x86-64 CPU: ggml's variants, the best loaded at start-up.
    if (process.arch === 'x64') {
      for (const variant of ['x64', 'haswell', 'skylakex', 'zen4']) {
        assert.ok(files.includes(`libggml-cpu-${variant}.so`));
      }
    }
    const lock = JSON.parse(readFileSync(join(hostDir, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    assert.ok(!lock.packages['node_modules/llamad']?.hasInstallScript, 'llamad declares an install script');
  });

  it('the daemon loads the prebuilt addon and generates tokens in its runner process', async () => {
    assert.match(output, new RegExp(`native addon: \\S+${CPU_PACKAGE}/bin/llamad.node \\(prebuilt package`));
    const create = await fetch(`${base}/api/create`, {
      method: 'POST',
      body: JSON.stringify({ model: 'tiny', modelfile: `FROM ${TINY_QWEN2}\n`, stream: false }),
    });
    assert.equal(create.status, 200, await create.clone().text());
    const r = await fetch(`${base}/api/generate`, {
      method: 'POST',
      body: JSON.stringify({ model: 'tiny', prompt: 'hello', stream: false, options: { num_predict: 8, seed: 1 } }),
    });
    const body = (await r.json()) as { response: string; eval_count: number; done: boolean };
    assert.equal(r.status, 200, JSON.stringify(body));
    assert.equal(body.done, true);
    assert.equal(body.eval_count, 8);
    assert.ok(body.response.length > 0);
    assert.equal(runnersOf(daemon!.pid!).length, 1, 'the model runs in a runner process of the installed package');
  });
});
