/**
 * Writing a generated model file (scripts/make-test-models.ts) with its sidecar stamp, reusing it when the stamp
 * matches; quantizing a bench model with the native addon.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { GgufValueType, formatParameterCount, readGguf } from '../src/models/gguf';
import { loadBinding } from '../src/native/load-binding';
import { writeGguf, type GgufKv } from './gguf-writer';
import {
  FILE_TYPE_F16,
  GENERATOR_VERSION,
  VOCAB_DIR,
  WEIGHT_STD,
  type ModelSpec,
  type QuantizedSpec,
} from './test-model-specs';
import {
  archKvs,
  bertTensors,
  elementCount,
  llamaTensors,
  randomTensors,
  u32,
  type TensorPlan,
} from './test-model-tensors';

// ---------------------------------------------------------------------------------------------------------------
// Generation with stamps

/** The sidecar `<file>.json` of a generated model: generator version, spec hash, file size (bytes), parameters. */
export interface Stamp {
  generator: 'make-test-models';
  version: number;
  specHash: string;
  size: number;
  parameterCount: number;
}

/** SHA-256 of a string or buffer, hex. */
export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function readStamp(file: string): Stamp | undefined {
  try {
    return JSON.parse(readFileSync(`${file}.json`, 'utf8')) as Stamp;
  } catch {
    return undefined;
  }
}

/** The stamp of `file` when it matches `specHash` and this generator's version and the file's size; else undefined. */
export function isUpToDate(file: string, specHash: string): Stamp | undefined {
  const stamp = readStamp(file);
  if (!stamp || stamp.version !== GENERATOR_VERSION || stamp.specHash !== specHash || !existsSync(file)) {
    return undefined;
  }
  return statSync(file).size === stamp.size ? stamp : undefined;
}

/** Writes the sidecar stamp of a file just made. */
export function writeStamp(file: string, specHash: string, parameterCount: number): void {
  const stamp: Stamp = {
    generator: 'make-test-models',
    version: GENERATOR_VERSION,
    specHash,
    size: statSync(file).size,
    parameterCount,
  };
  writeFileSync(`${file}.json`, `${JSON.stringify(stamp, null, 2)}\n`);
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** Prints one line per model made or reused: name, parameters, size in MB, seconds taken, path. */
export function report(verb: 'made' | 'reused', file: string, params: number, seconds?: number): void {
  const timing = seconds === undefined ? '' : ` in ${seconds.toFixed(1)} s`;
  console.log(
    `${verb.padEnd(6)} ${basename(file).padEnd(22)} ${formatParameterCount(params).padStart(7)} params ` +
      `${mb(statSync(file).size).padStart(10)}${timing}  ${file}`,
  );
}

/** Writes one model of `spec` into `dir` (reused when its stamp matches, unless `force`); returns the file's path. */
export async function makeModel(spec: ModelSpec, dir: string, force: boolean): Promise<string> {
  const file = join(dir, spec.file);
  const vocabPath = join(VOCAB_DIR, spec.vocab);
  const specHash = sha256(JSON.stringify({ spec, vocab: sha256(readFileSync(vocabPath)), std: WEIGHT_STD }));
  const current = force ? undefined : isUpToDate(file, specHash);
  if (current) {
    report('reused', file, current.parameterCount);
    return file;
  }

  const started = performance.now();
  const vocab = await readGguf(vocabPath);
  const tokenizerKvs: GgufKv[] = [];
  for (const [key, value] of Object.entries(vocab.metadata)) {
    if (!key.startsWith('tokenizer.')) continue;
    if (key === 'tokenizer.chat_template' && spec.chatTemplate !== undefined) continue;
    const { type, itemType } = vocab.types[key];
    tokenizerKvs.push({ key, type, value, itemType });
  }
  if (spec.chatTemplate !== undefined) {
    tokenizerKvs.push({ key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: spec.chatTemplate });
  }
  const tokens = vocab.metadata['tokenizer.ggml.tokens'];
  if (!Array.isArray(tokens)) throw new Error(`${vocabPath} has no tokenizer.ggml.tokens array`);
  const nVocab = tokens.length;

  const s = spec.shape;
  let plans: TensorPlan[];
  if (s.arch === 'llama') {
    plans = llamaTensors(s, nVocab, spec.silentLayersFrom);
  } else {
    const nTypes = vocab.metadata['tokenizer.ggml.token_type_count'];
    if (typeof nTypes !== 'number' || nTypes <= 0) {
      throw new Error(`${vocabPath} lacks tokenizer.ggml.token_type_count, which ${s.arch} requires`);
    }
    plans = bertTensors(s, nVocab, nTypes);
  }
  const parameterCount = plans.reduce((n, p) => n + elementCount(p.shape), 0);

  const kvs: GgufKv[] = [
    { key: 'general.architecture', type: GgufValueType.STRING, value: s.arch },
    { key: 'general.name', type: GgufValueType.STRING, value: spec.name },
    u32('general.file_type', FILE_TYPE_F16),
    { key: 'general.parameter_count', type: GgufValueType.UINT64, value: parameterCount },
    ...archKvs(s),
    ...(s.arch === 'llama' ? [u32('llama.vocab_size', nVocab)] : []),
    ...tokenizerKvs,
  ];

  const tensors = randomTensors(spec.name, plans);

  await writeGguf(file, kvs, tensors);
  writeStamp(file, specHash, parameterCount);
  report('made', file, parameterCount, (performance.now() - started) / 1000);
  return file;
}

/** Quantizes a bench F16 model with the native addon (e.g. bench-1b-q4_0.gguf). */
export async function makeQuantized(spec: QuantizedSpec, dir: string, force: boolean): Promise<void> {
  const source = join(dir, spec.source);
  const file = join(dir, spec.file);
  const sourceStamp = readStamp(source);
  if (!sourceStamp || !existsSync(source)) throw new Error(`cannot make ${spec.file}: ${source} is missing`);
  const specHash = sha256(JSON.stringify({ source: sourceStamp.specHash, type: spec.type }));
  const current = force ? undefined : isUpToDate(file, specHash);
  if (current) {
    report('reused', file, current.parameterCount);
    return;
  }
  let quantize: ((input: string, output: string, params: { type: 'Q4_0' }) => Promise<void>) | undefined;
  try {
    const binding = loadBinding();
    if (typeof binding.quantize === 'function') quantize = binding.quantize.bind(binding);
  } catch (err) {
    throw new Error(`cannot make ${spec.file}: ${(err as Error).message}`);
  }
  if (!quantize) {
    throw new Error(
      `cannot make ${spec.file}: the native addon has no quantize() yet ` +
        '(rebuild it with `npm run build:native` once it does)',
    );
  }
  const started = performance.now();
  const tmp = `${file}.tmp`;
  try {
    await quantize(source, tmp, { type: spec.type });
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  writeStamp(file, specHash, sourceStamp.parameterCount);
  report('made', file, sourceStamp.parameterCount, (performance.now() - started) / 1000);
}
