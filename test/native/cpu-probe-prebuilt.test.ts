// Issue 32, "Done when": with the trap forced, a Q4_0 model works with the prebuilt package. The prebuilt layout
// (build/prebuilt-cpu/bin: llamad.node and ggml's libggml-cpu-<variant>.so) is loaded in a child process with
// GGML_CPU_PROBE_TRAP naming the feature of the best variant for this CPU (vendor/patches/0002): ggml's probe must log
// its line, score that variant 0 and load a lower one, and a Q4_0 model must load and generate there. The variant a
// process loaded is read from /proc/<pid>/maps (ggml's own "loaded CPU backend from" line is info level, logged before
// any logger can be set). Skipped without the layout unless LLAMAD_REQUIRE_PREBUILT=1 (CI), then it fails.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ensureTestModels, TINY_LLAMA_SPM } from '../utils/models';
import { prebuiltCpuSkip, requirePrebuiltCpuAddon, trapForBestVariant } from '../utils/prebuilt';
import { binding } from './native-helpers';

const PROBE_LINE = /^cpu: (\S+) advertised by CPUID but its first instruction traps \(SIGILL\): (.*)$/;
const HELPERS = join(__dirname, 'native-helpers.js');
const PREBUILT_UTILS = join(__dirname, '..', 'utils', 'prebuilt.js');

/** What the child reports: tokens generated, the model's description, systemInfo() and the mapped CPU variants. */
interface ChildReport {
  generated: number;
  description: string;
  systemInfo: string;
  variants: string[];
}

/**
 * Loads `model` with the prebuilt addon (LLAMAD_ADDON) in a fresh process with `trap` as GGML_CPU_PROBE_TRAP (none
 * when undefined), generates 4 tokens; returns its exit status, its report and its stderr.
 */
function generateWithPrebuilt(addon: string, model: string, trap: string | undefined) {
  const script = `
    const h = require(${JSON.stringify(HELPERS)});
    const p = require(${JSON.stringify(PREBUILT_UTILS)});
    (async () => {
      const model = await h.loadModel(${JSON.stringify(model)}, { nGpuLayers: 0 });
      const ctx = new h.binding.Context(model, { nCtx: 128, nThreads: 2 });
      const r = await h.runTask(ctx, { tokens: model.tokenize('Once upon a time', true, false), nPredict: 4, ignoreEos: true });
      const report = { generated: r.tokens.length, description: model.info().description,
        systemInfo: h.binding.systemInfo(), variants: p.mappedCpuVariants() };
      console.log('report ' + JSON.stringify(report));
      process.exit(0);
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const { GGML_CPU_PROBE_TRAP: _, LLAMAD_BACKEND: __, ...base } = process.env;
  const env = { ...base, LLAMAD_ADDON: addon, ...(trap ? { GGML_CPU_PROBE_TRAP: trap } : {}) };
  const r = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8', timeout: 120_000 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('report '));
  const report = line ? (JSON.parse(line.slice('report '.length)) as ChildReport) : undefined;
  return { status: r.status, signal: r.signal, report, stderr: r.stderr };
}

describe(
  'CPU probe with the prebuilt layout: the best variant traps, a lower one serves a Q4_0 model',
  {
    skip: prebuiltCpuSkip(),
  },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'llamad-cpu-probe-prebuilt-'));
    const q4 = join(dir, 'tiny-q4_0.gguf');
    let addon: string;

    before(async () => {
      addon = requirePrebuiltCpuAddon();
      ensureTestModels();
      await binding.quantize(TINY_LLAMA_SPM, q4, { type: 'Q4_0', nThreads: 2 });
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('GGML_CPU_PROBE_TRAP on the best variant’s feature: one probe line per trapped feature, a lower variant, tokens', (t) => {
      const plain = generateWithPrebuilt(addon, q4, undefined);
      assert.equal(plain.status, 0, plain.stderr);
      assert.ok(plain.report, plain.stderr);
      assert.equal(plain.report.generated, 4);
      assert.equal(plain.report.variants.length, 1, `one CPU variant mapped: ${plain.report.variants.join(', ')}`);
      const best = plain.report.variants[0];
      const trap = trapForBestVariant(plain.report.systemInfo);
      if (!trap) {
        t.skip(`the best variant here (${best}) uses neither AVX2 nor AVX-512: no lower variant to fall back to`);
        return;
      }
      // Without the hook the best variant's features run (a CPU that really traps, e.g. AMX, may log its own line).
      const plainLines = plain.stderr.split('\n').filter((l) => PROBE_LINE.exec(l)?.[1].startsWith(trap.flag));
      assert.deepEqual(plainLines, [], 'no hook, no line for the feature');

      const forced = generateWithPrebuilt(addon, q4, trap.trap);
      assert.equal(forced.status, 0, `signal ${forced.signal}: ${forced.stderr}`);
      assert.ok(forced.report, forced.stderr);
      assert.equal(forced.report.generated, 4, 'it generated');
      assert.match(forced.report.description, /Q4_0/);
      // One line per trapped feature (several for `avx512`: each family the variants use); a CPU that really traps
      // another feature (AMX on the VM of issue 32) adds its own line.
      const probes = forced.stderr
        .split('\n')
        .map((l) => PROBE_LINE.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .filter(([, feature]) => feature.startsWith(trap.flag));
      assert.ok(probes.length >= 1, `no ${trap.flag} probe line in:\n${forced.stderr}`);
      for (const [line, , consequence] of probes) {
        assert.equal(consequence, 'CPU backend variants that use it are skipped', line);
      }
      assert.equal(forced.report.variants.length, 1, forced.report.variants.join(', '));
      assert.notEqual(forced.report.variants[0], best, `still the ${best} variant`);
      assert.doesNotMatch(forced.report.systemInfo, new RegExp(`\\b${trap.flag} = 1\\b`), forced.report.systemInfo);
    });
  },
);
