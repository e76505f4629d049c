// Issue 32, "Done when": with the trap forced, `ollama run`-style use of a Q4_0 model works with the prebuilt
// package. The real daemon (dist/src/main.js) runs with LLAMAD_ADDON = the prebuilt layout's addon and
// GGML_CPU_PROBE_TRAP naming the feature of the best CPU variant here (vendor/patches/0002): a model created with
// `quantize: q4_0` answers /api/generate in its runner process, which loaded a lower variant. Skipped without the
// layout (build/prebuilt-cpu) unless LLAMAD_REQUIRE_PREBUILT=1 (CI), then it fails.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT } from '../../src/config';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { mappedCpuVariants, prebuiltCpuSkip, requirePrebuiltCpuAddon, trapForBestVariant } from '../utils/prebuilt';
import { runnersOf } from '../utils/processes';
import { freePort } from '../utils/registry-server';

const PROBE_LINES = /cpu: (\S+) advertised by CPUID but its first instruction traps \(SIGILL\): (.*)$/gm;
const LOAD_BINDING = resolve(REPO_ROOT, 'dist', 'src', 'native', 'load-binding.js');
const PREBUILT_UTILS = join(__dirname, '..', 'utils', 'prebuilt.js');

/** The prebuilt addon's system info and CPU variant in a process without any trap. */
function bestVariant(addon: string): { systemInfo: string; variant: string } {
  const script = `
    const b = require(${JSON.stringify(LOAD_BINDING)}).loadBinding();
    console.log(JSON.stringify({ systemInfo: b.systemInfo(), variant: require(${JSON.stringify(PREBUILT_UTILS)}).mappedCpuVariants()[0] }));`;
  const { GGML_CPU_PROBE_TRAP: _, ...env } = process.env;
  const r = spawnSync(process.execPath, ['-e', script], {
    env: { ...env, LLAMAD_ADDON: addon },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  const best = JSON.parse(r.stdout) as { systemInfo: string; variant?: string };
  assert.ok(best.variant, `no libggml-cpu-*.so mapped by ${addon}`);
  return { systemInfo: best.systemInfo, variant: best.variant };
}

describe('daemon with the prebuilt addon and the best CPU variant trapping', { skip: prebuiltCpuSkip() }, () => {
  let dir: string;
  let daemon: ChildProcess | undefined;
  let output = '';
  let base = '';
  let best: { systemInfo: string; variant: string };
  let trap: { trap: string; flag: string } | undefined;

  before(async () => {
    const addon = requirePrebuiltCpuAddon();
    ensureTestModels();
    best = bestVariant(addon);
    trap = trapForBestVariant(best.systemInfo);
    if (!trap) return;
    dir = mkdtempSync(join(tmpdir(), 'llamad-probe-prebuilt-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    daemon = spawn(process.execPath, [resolve(REPO_ROOT, 'dist', 'src', 'main.js')], {
      env: {
        ...process.env,
        LLAMAD_ADDON: addon,
        GGML_CPU_PROBE_TRAP: trap.trap,
        OLLAMA_HOST: `127.0.0.1:${port}`,
        OLLAMA_MODELS: join(dir, 'models'),
        OLLAMA_CONTEXT_LENGTH: '512',
        LLAMAD_THREADS: '2',
        HOME: dir,
        NO_COLOR: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    daemon.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    daemon.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    for (let i = 0; i < 300 && !/listening on/.test(output) && daemon.exitCode === null; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(output, /listening on/, `the daemon did not start:\n${output}`);
  });

  after(() => {
    daemon?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('creates a q4_0 model with quantize and generates with it', { timeout: 180_000 }, async (t) => {
    if (!trap) {
      t.skip(`the best variant here (${best.variant}) uses neither AVX2 nor AVX-512: no lower variant`);
      return;
    }
    const post = (path: string, body: unknown) =>
      fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(120_000) });
    const f16 = await post('/api/create', { model: 'tiny-f16', modelfile: `FROM ${TINY_LLAMA_SPM}\n`, stream: false });
    assert.equal(f16.status, 200, await f16.text());
    const q4 = await post('/api/create', { model: 'tiny-q4', from: 'tiny-f16', quantize: 'q4_0', stream: false });
    assert.equal(q4.status, 200, await q4.text());
    const r = await post('/api/generate', {
      model: 'tiny-q4',
      prompt: 'Once upon a time',
      stream: false,
      options: { num_predict: 8, seed: 1, temperature: 0 },
    });
    const text = await r.text();
    assert.equal(r.status, 200, `${text}\n${output}`);
    const body = JSON.parse(text) as { done: boolean; eval_count: number; response: string };
    assert.equal(body.done, true);
    assert.equal(body.eval_count, 8);

    const flag = trap.flag;
    const probes = [...output.matchAll(PROBE_LINES)].filter(([, feature]) => feature.startsWith(flag));
    assert.ok(probes.length > 0, `no ${flag} probe line in the daemon log:\n${output}`);
    const runners = runnersOf(daemon!.pid!);
    assert.equal(runners.length, 1, 'the model runs in a runner process');
    const variants = mappedCpuVariants(runners[0]);
    assert.equal(variants.length, 1, variants.join(', '));
    assert.notEqual(variants[0], best.variant, `the runner still loaded the ${best.variant} variant`);
  });
});
