// ggml's CPU probe (vendor/patches/0002) and the runner's SIGILL retry, with the real addon and a Q4_0 model
// (docs/native.md "CPU probe"). The trap is forced with the test hooks, so that the real SIGILL paths run on a CPU
// that executes everything: GGML_CPU_PROBE_TRAP=amx (ud2 inside ggml's guard) and LLAMAD_TEST_RUNNER_SIGILL (the
// runner process kills itself with SIGILL after its model loaded).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Logger, LoggerService } from '@nestjs/common';
import { lastValueFrom, toArray } from 'rxjs';
import { RunnerTerminatedError } from '../../src/common/errors';
import { loadBinding } from '../../src/native';
import { ProcessRunnerFactory, RunnerSpec } from '../../src/runner';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { GREEDY } from '../utils/sampling';
import { binding, GPU_ADDON, loadModel } from './native-helpers';

ensureTestModels();

const PROBE_LINE = /^cpu: (\S+) advertised by CPUID but its first instruction traps \(SIGILL\): (.*)$/;
const HELPERS = join(__dirname, 'native-helpers.js');

/** Loads `model` in a fresh process with `env`, generates 4 tokens; returns its exit status, stdout and stderr. */
function generateInChild(model: string, env: Record<string, string>) {
  const script = `
    const h = require(${JSON.stringify(HELPERS)});
    (async () => {
      const model = await h.loadModel(${JSON.stringify(model)});
      const ctx = new h.binding.Context(model, { nCtx: 128, nThreads: 2 });
      const r = await h.runTask(ctx, { tokens: model.tokenize('Once upon a time', true, false), nPredict: 4, ignoreEos: true });
      console.log('generated ' + r.tokens.length + ' ' + model.info().description);
      process.exit(0);
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const { GGML_CPU_PROBE_TRAP: _, ...base } = process.env;
  return spawnSync(process.execPath, ['-e', script], { env: { ...base, ...env }, encoding: 'utf8', timeout: 120_000 });
}

describe('CPU probe: an extension that CPUID advertises but that traps', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llamad-cpu-probe-'));
  const q4 = join(dir, 'tiny-q4_0.gguf');
  const logged: string[] = [];
  const capture: LoggerService = {
    log: (m: unknown) => void logged.push(String(m)),
    warn: (m: unknown) => void logged.push(String(m)),
    error: (m: unknown) => void logged.push(String(m)),
  };

  before(async () => {
    await binding.quantize(TINY_LLAMA_SPM, q4, { type: 'Q4_0', nThreads: 2 });
    Logger.overrideLogger(capture);
  });
  after(() => {
    Logger.overrideLogger(false);
    delete process.env.GGML_CPU_PROBE_TRAP;
    delete process.env.LLAMAD_TEST_RUNNER_SIGILL;
    rmSync(dir, { recursive: true, force: true });
  });

  it('GGML_CPU_PROBE_TRAP=amx: ggml logs one line, and a Q4_0 model still loads and generates', () => {
    const forced = generateInChild(q4, { GGML_CPU_PROBE_TRAP: 'amx' });
    assert.equal(forced.status, 0, forced.stderr);
    assert.match(forced.stdout, /^generated 4 .*Q4_0/m);
    const lines = forced.stderr.split('\n').filter((l) => PROBE_LINE.test(l));
    assert.deepEqual(lines, ['cpu: AMX advertised by CPUID but its first instruction traps (SIGILL): AMX disabled']);

    const plain = generateInChild(q4, {});
    assert.equal(plain.status, 0, plain.stderr);
    assert.match(plain.stdout, /^generated 4 /m);
    assert.equal(plain.stderr.split('\n').filter((l) => PROBE_LINE.test(l)).length, 0, 'no trap, no line');
  });

  it('useExtraBufferTypes: false keeps the Q4_0 weights out of the CPU backend’s repack buffer', async () => {
    const buffers = async (params: { useExtraBufferTypes?: boolean }) => {
      const model = await loadModel(q4, { ...params, nGpuLayers: 0 });
      const ctx = new binding.Context(model, { nCtx: 64, nThreads: 2 });
      const names = ctx
        .memory()
        .filter((e) => e.model > 0)
        .map((e) => e.buffer);
      await model.dispose();
      return names;
    };
    // x86 with AVX2 (and arm64 with dotprod) repack Q4_0; a GPU build may keep CPU layers unpacked
    if (!GPU_ADDON) assert.ok((await buffers({})).includes('CPU_REPACK'), 'by default the weights are repacked');
    const off = await buffers({ useExtraBufferTypes: false });
    assert.ok(off.length > 0 && !off.includes('CPU_REPACK'), off.join(', '));
  });

  const spec = (): RunnerSpec => ({
    modelPath: q4,
    numCtx: 128,
    numBatch: 32,
    numGpu: -1,
    numThread: 2,
    numParallel: 1,
  });

  it('a runner that dies of SIGILL while loading is retried without extra buffer types and generates', async () => {
    logged.length = 0;
    process.env.LLAMAD_TEST_RUNNER_SIGILL = 'extra-bufts';
    try {
      const factory = new ProcessRunnerFactory(loadBinding);
      const runner = await factory.create(spec(), { modelName: 'q4' });
      try {
        assert.equal(logged.filter((l) => l.includes('raising SIGILL')).length, 1);
        const tokens = await runner.tokenize('Once upon a time', { addSpecial: true, parseSpecial: false });
        const events = await lastValueFrom(
          runner.generate({ tokens, numPredict: 4, sampling: GREEDY, stop: [] }).pipe(toArray()),
        );
        assert.equal(events.at(-1)?.kind, 'done');
        assert.ok(
          events.some((e) => e.kind === 'token'),
          'it generated',
        );
      } finally {
        await runner.close();
      }
    } finally {
      delete process.env.LLAMAD_TEST_RUNNER_SIGILL;
    }
  });

  it('when the retry dies too, the 500 names the CPU feature from the probe line', async () => {
    logged.length = 0;
    process.env.LLAMAD_TEST_RUNNER_SIGILL = 'always';
    process.env.GGML_CPU_PROBE_TRAP = 'amx';
    try {
      const factory = new ProcessRunnerFactory(loadBinding);
      await assert.rejects(factory.create(spec(), { modelName: 'q4' }), (err: unknown) => {
        assert.ok(err instanceof RunnerTerminatedError);
        assert.equal(err.message, 'llama runner process has terminated: signal: illegal instruction (CPU feature AMX)');
        return true;
      });
      assert.equal(logged.filter((l) => l.includes('raising SIGILL')).length, 2, 'tried twice');
      assert.ok(
        logged.some((l) => PROBE_LINE.test(l)),
        'the probe line reached the daemon log',
      );
    } finally {
      delete process.env.LLAMAD_TEST_RUNNER_SIGILL;
      delete process.env.GGML_CPU_PROBE_TRAP;
    }
  });
});
