import assert from 'node:assert/strict';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT, type RunnerMode } from '../../src/config';
import { findAddonPath } from '../../src/native/load-binding';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { runnersOf } from '../utils/processes';

// The package as a library (issue 13, first "Done when" bullet): `npm pack` the repository, install the tarball into
// a copy of examples/host-app by its name (no relative src/ imports), build and start that NestJS application, and
// check what it mounts under /llm, its own authorizer, its request hook and its own service streaming through the
// facade with `for await`. The install skips install scripts (no llama.cpp build inside node_modules): the host is
// pointed at the addon this checkout built through LLAMAD_ADDON. npm resolves the dependencies from its cache
// (--offline), or from the registry when the cache lacks them; the test is skipped when neither works.

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const TENANT = { 'x-tenant': 'acme' };
const JSON_HEADERS = { 'content-type': 'application/json' };

interface Setup {
  dir: string;
  hostDir: string;
}

function run(cmd: string, args: string[], cwd: string): { ok: boolean; output: string } {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** The Nest packages a host depends on directly (examples/host-app/package.json). */
const NEST_PACKAGES = ['@nestjs/common', '@nestjs/core', '@nestjs/platform-fastify'];

/** The newest 11.x of each of NEST_PACKAGES on the registry, or why it could not be asked. */
function newestNest(): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const name of NEST_PACKAGES) {
    const r = run(NPM, ['view', `${name}@^11`, 'version', '--json'], tmpdir());
    if (!r.ok) return `npm view ${name} failed: ${r.output.slice(-200)}`;
    const versions = JSON.parse(r.output) as string | string[];
    out[name] = Array.isArray(versions) ? versions[versions.length - 1] : versions;
  }
  return out;
}

/** The version of `name` installed under `dir`'s node_modules. */
function installedVersion(dir: string, name: string): string {
  return (JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version;
}

/** Packs the repository and installs the tarball into a copy of examples/host-app; a string says why it could not. */
function prepare(): Setup | string {
  const dir = mkdtempSync(join(tmpdir(), 'llamad-host-app-'));
  const pack = run(NPM, ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], REPO_ROOT);
  if (!pack.ok) return `npm pack failed: ${pack.output.slice(-500)}`;
  const [{ filename }] = JSON.parse(pack.output.slice(pack.output.indexOf('['))) as { filename: string }[];
  const tarball = join(dir, filename);

  const hostDir = join(dir, 'host-app');
  cpSync(join(REPO_ROOT, 'examples', 'host-app'), hostDir, {
    recursive: true,
    filter: (src) => !/[/\\](node_modules|dist)$/.test(src),
  });
  const manifest = JSON.parse(readFileSync(join(hostDir, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  manifest.dependencies.llamad = `file:${tarball}`;
  // The host on the newest Nest 11 release the registry has (issue 24: llamad's Nest packages are peers, so the
  // host's own Nest serves both); offline, the example's ranges resolve from npm's cache.
  const newest = newestNest();
  if (typeof newest === 'object') Object.assign(manifest.dependencies, newest);
  writeFileSync(join(hostDir, 'package.json'), JSON.stringify(manifest, null, 2));

  const flags = ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'];
  let install = run(NPM, [...flags, '--offline'], hostDir);
  if (!install.ok) install = run(NPM, [...flags, '--prefer-offline'], hostDir);
  if (!install.ok) return `npm install of the packed tarball failed offline and online: ${install.output.slice(-500)}`;
  if (!existsSync(join(hostDir, 'node_modules', 'llamad', 'dist', 'src', 'index.d.ts'))) {
    return 'the installed package has no type declarations (dist/src/index.d.ts)';
  }
  return { dir, hostDir };
}

/** Starts the built host app; resolves with its base URL once it listens. */
function start(
  hostDir: string,
  modelsDir: string,
  addon: string,
  runner: RunnerMode,
): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: hostDir,
    env: {
      ...process.env,
      LLAMAD_RUNNER: runner,
      PORT: '0',
      HOST: '127.0.0.1',
      LLAMAD_ADDON: addon,
      OLLAMA_MODELS: modelsDir,
      OLLAMA_NUM_PARALLEL: '1',
      OLLAMA_CONTEXT_LENGTH: '512',
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`host app did not start within 60 s:\n${output.slice(-2000)}`));
    }, 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /host-app listening on (http:\/\/[^\s]+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ child, base: m[1].replace('[::1]', '127.0.0.1') });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`host app exited with ${String(code)}:\n${output.slice(-2000)}`));
    });
  });
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) });
}

interface Stats {
  generations: number;
  byModel: Record<string, { promptTokens: number; completionTokens: number }>;
  last: { kind: string; completionTokens: number; promptTokens: number; error?: string; doneReason?: string }[];
}

const addon = findAddonPath();
const skipReason = addon ? undefined : 'the native addon is not built (npm run build:native)';

/** The package packed, installed into the host copy and built once for both runner modes (or why not). */
let prepared: Setup | string | undefined;
function prepareOnce(): Setup | string {
  if (prepared !== undefined) return prepared;
  ensureTestModels();
  prepared = prepare();
  if (typeof prepared === 'string') return prepared;
  const tsc = join(prepared.hostDir, 'node_modules', 'typescript', 'bin', 'tsc');
  const build = run(process.execPath, [tsc, '-p', 'tsconfig.json'], prepared.hostDir);
  assert.ok(build.ok, `the host app does not compile against the package's declarations:\n${build.output}`);
  return prepared;
}

after(() => {
  if (typeof prepared === 'object') rmSync(prepared.dir, { recursive: true, force: true });
});

// The library host runs in both runner modes: models in runner processes (the default: the child entry ships in the
// package's dist) and in-process (LLAMAD_RUNNER=inprocess, read by the host through loadConfig).
for (const runner of ['process', 'inprocess'] as const) {
  describe(
    `examples/host-app: the packed package in a NestJS host (${runner} runner)`,
    { skip: skipReason, timeout: 240_000 },
    () => {
      let setup: Setup | string;
      let host: { child: ChildProcess; base: string } | undefined;

      before(async () => {
        setup = prepareOnce();
        if (typeof setup === 'string') return;
        host = await start(setup.hostDir, join(setup.dir, `models-${runner}`), addon!, runner);
      });

      after(async () => {
        const child = host?.child;
        if (child && child.exitCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
          await exited;
          clearTimeout(timer);
        }
      });

      it('runs on its own Nest: one copy of each Nest package, the host’s, newer than the lockfile’s when the registry has one', (t) => {
        if (typeof setup === 'string') return t.skip(setup);
        const hostDir = setup.hostDir;
        for (const name of NEST_PACKAGES) {
          assert.ok(
            !existsSync(join(hostDir, 'node_modules', 'llamad', 'node_modules', name)),
            `llamad brought its own ${name}: the host's Nest must serve both`,
          );
        }
        const host = installedVersion(hostDir, '@nestjs/core');
        const ours = installedVersion(REPO_ROOT, '@nestjs/core');
        const newest = newestNest();
        if (typeof newest === 'string') return t.skip(`registry not reachable (${newest}); host on ${host}`);
        assert.equal(host, newest['@nestjs/core']);
        if (host === ours) return t.skip(`the newest Nest 11 (${host}) is the lockfile's own`);
        assert.notEqual(host, ours);
      });

      it('answers /llm/api/chat on a model created through /llm/api/create', async (t) => {
        if (typeof setup === 'string') return t.skip(setup);
        const base = host!.base;
        const created = await post(
          `${base}/llm/api/create`,
          { model: 'tiny', from: TINY_LLAMA_SPM, stream: false },
          TENANT,
        );
        assert.equal(created.status, 200, await created.clone().text());
        assert.deepEqual(await created.json(), { status: 'success', done: true });

        const res = await post(
          `${base}/llm/api/chat`,
          { model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], stream: false, options: { num_predict: 4 } },
          TENANT,
        );
        assert.equal(res.status, 200);
        const body = (await res.json()) as { message: { role: string }; done: boolean; eval_count: number };
        assert.equal(body.message.role, 'assistant');
        assert.equal(body.done, true);
        assert.equal(body.eval_count, 4);
        const runners = runnersOf(host!.child.pid!);
        assert.equal(runners.length, runner === 'process' ? 1 : 0, `runner processes: ${runners.join(', ')}`);
      });

      it('refuses requests its custom authorizer rejects, in the dialect of the route', async (t) => {
        if (typeof setup === 'string') return t.skip(setup);
        const base = host!.base;
        const native = await fetch(`${base}/llm/api/tags`);
        assert.equal(native.status, 401);
        assert.deepEqual(await native.json(), { error: 'unauthorized: unknown tenant' });
        const openai = await post(`${base}/llm/v1/chat/completions`, { model: 'tiny', messages: [] });
        assert.equal(openai.status, 401);
        const openaiBody = (await openai.json()) as { error: { message: string; code: string } };
        assert.equal(openaiBody.error.message, 'unauthorized: unknown tenant');
        const anthropic = await post(`${base}/llm/v1/messages`, { model: 'tiny', max_tokens: 1, messages: [] });
        assert.equal(anthropic.status, 401);
        const anthropicBody = (await anthropic.json()) as { type: string; error: { type: string } };
        assert.equal(anthropicBody.type, 'error');
        assert.equal(anthropicBody.error.type, 'authentication_error');
        const wrongTenant = await fetch(`${base}/llm/api/tags`, { headers: { 'x-tenant': 'other' } });
        assert.equal(wrongTenant.status, 401);
        assert.equal((await fetch(`${base}/llm/api/tags`, { headers: TENANT })).status, 200);
      });

      it('records token counts through its REQUEST_HOOKS hook (GET /stats)', async (t) => {
        if (typeof setup === 'string') return t.skip(setup);
        const stats = (await (await fetch(`${host!.base}/stats`)).json()) as Stats;
        assert.ok(stats.generations >= 1);
        const tiny = stats.byModel['tiny:latest'];
        assert.ok(tiny, JSON.stringify(stats));
        assert.ok(tiny.promptTokens > 0);
        assert.ok(tiny.completionTokens >= 4);
        const chat = stats.last.find((g) => g.kind === 'chat' && g.doneReason === 'length');
        assert.ok(chat, JSON.stringify(stats.last));
        assert.equal(chat.completionTokens, 4);
      });

      it('streams a chat in its own service with for await and stops it early, freeing the slot', async (t) => {
        if (typeof setup === 'string') return t.skip(setup);
        const base = host!.base;
        const res = await fetch(`${base}/demo-stream?model=tiny&max=3`);
        assert.equal(res.status, 200);
        const demo = (await res.json()) as { count: number; chunks: { done: boolean; message: { content: string } }[] };
        assert.equal(demo.count, 3);
        assert.equal(demo.chunks.length, 3);
        assert.ok(demo.chunks.every((c) => c.done === false));

        const stats = (await (await fetch(`${base}/stats`)).json()) as Stats;
        const cancelled = stats.last.at(-1)!;
        assert.equal(cancelled.kind, 'chat');
        assert.equal(cancelled.error, 'cancelled', 'leaving the loop cancelled the generation');
        assert.ok(cancelled.completionTokens >= 3 && cancelled.completionTokens < 256, JSON.stringify(cancelled));

        // One slot (OLLAMA_NUM_PARALLEL=1): the next request is served, and no slot is left busy.
        const next = await post(
          `${base}/llm/api/generate`,
          { model: 'tiny', prompt: 'Hi', stream: false, options: { num_predict: 2 } },
          TENANT,
        );
        assert.equal(next.status, 200);
        assert.equal(((await next.json()) as { eval_count: number }).eval_count, 2);
        const metrics = await fetch(`${base}/llm/metrics`, { headers: TENANT });
        if (metrics.ok) {
          const busy = (await metrics.text()).split('\n').filter((l) => l.startsWith('llamad_slots_busy{'));
          for (const line of busy) assert.match(line, / 0$/, line);
        }
      });
    },
  );
}
