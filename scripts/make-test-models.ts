/**
 * Writes random-weight GGUF models with real tokenizers (from vendor/llama.cpp/models/ggml-vocab-*.gguf) for tests
 * and benchmarks. No network access is needed.
 *
 * Usage: node dist/scripts/make-test-models.js [--bench] [--force] [--out DIR] [--only FILE[,FILE...]]
 *   (default)  the tiny models, into $LLAMAD_MODELS_DIR or test/fixtures/models/ (a few seconds)
 *   --bench    also bench-1b-f16.gguf (Llama-3.2-1B shape, ≈2.08 GB), bench-1b-q4_0.gguf (quantized by the native
 *              addon), bench-1b-draft-f16/-q4_0.gguf (its first 2 layers, a speculative draft), bench-bert-f16.gguf
 *              (bge-small shape, ≈67 MB) and the agreeing pair bench-agree-f16.gguf (16 layers, 15 of them silent,
 *              ≈530 MB) / bench-agree-draft-f16.gguf (its first layer, ≈95 MB) and bench-audio-mmproj.gguf (an audio
 *              projector of bench-1b, Whisper-base-sized, ≈44 MB) into .cache/models/
 *   --force    regenerate even when an up-to-date file exists
 *   --out DIR  write every model into DIR
 *   --only F   make only the named files (e.g. tiny-llama-spm.gguf)
 *
 * Each model gets a sidecar `<file>.json` stamp (generator version + spec hash); a model whose stamp matches is
 * reused. Weights are N(0, 0.02) from a seeded PRNG (files are reproducible), norm weights 1, biases 0; matrices are
 * F16, vectors F32.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from '../src/config';
import {
  BENCH_AUDIO_MMPROJ,
  TINY_AUDIO_MMPROJ,
  TINY_OMNI_MMPROJ,
  makeAudioProjector,
  makeOmniProjector,
} from './test-model-audio';
import { BENCH_1B_LORAS, TINY_LLAMA_SPM_LORAS, TINY_MMPROJ, makeLora, makeProjector } from './test-model-extras';
import { makeModel, makeQuantized } from './test-model-files';
import { BENCH_QUANTIZED, MODEL_SPECS, type ModelSpec } from './test-model-specs';

interface Options {
  bench: boolean;
  force: boolean;
  out?: string;
  only?: Set<string>;
}

const USAGE = 'usage: make-test-models [--bench] [--force] [--out DIR] [--only FILE[,FILE...]]';

function parseArgs(argv: string[]): Options {
  const opts: Options = { bench: false, force: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--bench') opts.bench = true;
    else if (a === '--force') opts.force = true;
    else if (a === '--out' && i + 1 < argv.length) opts.out = resolve(argv[++i]);
    else if (a === '--only' && i + 1 < argv.length) opts.only = new Set(argv[++i].split(','));
    else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else {
      throw new Error(`unknown argument ${a} (${USAGE})`);
    }
  }
  return opts;
}

/** Default directory of the tiny models: $LLAMAD_MODELS_DIR or test/fixtures/models. */
export function tinyModelsDir(): string {
  const env = process.env.LLAMAD_MODELS_DIR;
  return env ? resolve(env) : join(REPO_ROOT, 'test', 'fixtures', 'models');
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const dirs = {
    tiny: opts.out ?? tinyModelsDir(),
    bench: opts.out ?? join(REPO_ROOT, '.cache', 'models'),
  };
  const wanted = (file: string, group: ModelSpec['group']): boolean =>
    opts.only ? opts.only.has(file) : group === 'tiny' || opts.bench;
  if (opts.only) {
    const known = new Set([
      ...MODEL_SPECS.map((s) => s.file),
      TINY_MMPROJ.file,
      TINY_AUDIO_MMPROJ.file,
      TINY_OMNI_MMPROJ.file,
      BENCH_AUDIO_MMPROJ.file,
      ...TINY_LLAMA_SPM_LORAS.map((l) => l.file),
      ...BENCH_1B_LORAS.map((l) => l.file),
      ...BENCH_QUANTIZED.map((q) => q.file),
    ]);
    const unknown = [...opts.only].filter((f) => !known.has(f));
    if (unknown.length > 0) throw new Error(`unknown model ${unknown.join(', ')} (known: ${[...known].join(', ')})`);
  }
  for (const spec of MODEL_SPECS) {
    if (!wanted(spec.file, spec.group)) continue;
    mkdirSync(dirs[spec.group], { recursive: true });
    await makeModel(spec, dirs[spec.group], opts.force);
  }
  if (wanted(TINY_MMPROJ.file, 'tiny')) {
    mkdirSync(dirs.tiny, { recursive: true });
    await makeProjector(dirs.tiny, opts.force);
  }
  for (const [file, make] of [
    [TINY_AUDIO_MMPROJ.file, makeAudioProjector],
    [TINY_OMNI_MMPROJ.file, makeOmniProjector],
  ] as const) {
    if (!wanted(file, 'tiny')) continue;
    mkdirSync(dirs.tiny, { recursive: true });
    await make(dirs.tiny, opts.force);
  }
  for (const lora of TINY_LLAMA_SPM_LORAS) {
    if (!wanted(lora.file, 'tiny')) continue;
    mkdirSync(dirs.tiny, { recursive: true });
    await makeLora(dirs.tiny, opts.force, lora);
  }
  if (wanted(BENCH_AUDIO_MMPROJ.file, 'bench')) {
    mkdirSync(dirs.bench, { recursive: true });
    await makeAudioProjector(dirs.bench, opts.force, BENCH_AUDIO_MMPROJ);
  }
  for (const q of BENCH_QUANTIZED) {
    if (wanted(q.file, 'bench')) await makeQuantized(q, dirs.bench, opts.force);
  }
  for (const lora of BENCH_1B_LORAS) {
    if (wanted(lora.file, 'bench')) await makeLora(dirs.bench, opts.force, lora);
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`make-test-models: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
