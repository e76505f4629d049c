import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { rm, stat } from 'node:fs/promises';
import type { NativeBinding, NativeQuantType } from '../../binding';
import { DaemonError, InternalError } from '../common/errors';
import { mapNativeError, NATIVE_BINDING, NativeBindingLoader } from '../native';
import { estimateQuantizedSize, QUANTIZE_PROGRESS_DIGEST, quantizeCompleted } from './create-support';
import { FACTS_MAX_ARRAY_ITEMS, modelDetails, readGguf } from './gguf';
import type { CreateEmit, CreatePlan } from './model-create.types';
import { BlobPin, MODEL_STORE, ModelStore, StoredBlob } from './model-store';
import { describeIoError, redactPaths } from './store-errors';

/** How often the quantization output file is polled for progress records, ms. */
const QUANTIZE_POLL_MS = 250;

/** A DaemonError whose message may quote native or file-system text, with absolute paths replaced by `<path>`. */
function withoutPaths(err: DaemonError): DaemonError {
  err.message = redactPaths(err.message);
  return err;
}

/** Create's quantization step: source GGUF → `binding.quantize` (a native worker thread) → a new blob. */
@Injectable()
export class ModelCreateQuantizer {
  private readonly logger = new Logger(ModelCreateQuantizer.name);

  constructor(
    @Inject(MODEL_STORE) private readonly store: ModelStore,
    @Optional() @Inject(NATIVE_BINDING) private readonly loadBinding?: NativeBindingLoader,
  ) {}

  /**
   * The addon, for quantization (the planner calls it to fail before any progress is streamed).
   * @throws InternalError (500) `quantization needs the native addon: <loader's reason>`.
   */
  nativeBinding(): NativeBinding {
    try {
      if (!this.loadBinding) throw new Error('no native binding configured');
      return this.loadBinding();
    } catch (err) {
      const reason = redactPaths((err as Error).message);
      throw new InternalError(`quantization needs the native addon: ${reason}`, { cause: err });
    }
  }

  /**
   * Quantizes `sourcePath` to `plan.quantize.type` into a new blob (temp file in blobs/ → hashed → renamed; the
   * temp file is removed on failure) and reads back its file type. For the JSON form it streams Ollama's progress
   * records `{status: "quantizing <from> model to <to>", digest: "0000000000000000000", total, completed}` (bytes:
   * total = the source size, completed = total × output size so far / estimated output size, polled every
   * QUANTIZE_POLL_MS since llama_model_quantize has no progress callback): one with completed 0 first, changed
   * values while it runs, and one with completed = total when it finished; then `verifying conversion`.
   * @param q the quantization (default `plan.quantize`; the draft's for `draft_quantize`).
   * @param label what the log line names (default `plan.baseLabel`).
   * @throws InternalError when the addon cannot be loaded or llama.cpp fails (LLAMA_QUANTIZE_FAILED).
   */
  async quantizeInto(
    sourcePath: string,
    plan: CreatePlan,
    emit: CreateEmit,
    pin: BlobPin,
    q: { type: NativeQuantType; from: string } = plan.quantize!,
    label: string = plan.baseLabel,
  ): Promise<{ blob: StoredBlob; fileType: string }> {
    const status = `quantizing ${q.from} model to ${q.type}`;
    const binding = this.nativeBinding();
    const tmp = await this.store.newTempBlobPath();
    const total = plan.form === 'json' ? await this.sourceSize(sourcePath) : 0;
    const expected = estimateQuantizedSize(total, q.from, q.type);
    const progress = (completed: number) => emit({ status, digest: QUANTIZE_PROGRESS_DIGEST, total, completed });
    let last = 0;
    let timer: NodeJS.Timeout | undefined;
    if (plan.form === 'json') {
      progress(0);
      timer = setInterval(() => {
        stat(tmp).then(
          (info) => {
            const completed = quantizeCompleted(info.size, expected, total);
            if (timer === undefined || completed <= last) return;
            last = completed;
            progress(completed);
          },
          () => undefined, // not created yet
        );
      }, QUANTIZE_POLL_MS);
    }
    try {
      await binding.quantize(sourcePath, tmp, { type: q.type });
    } catch (err) {
      await rm(tmp, { force: true });
      throw withoutPaths(err instanceof DaemonError ? err : mapNativeError(err));
    } finally {
      clearInterval(timer);
      timer = undefined;
    }
    if (plan.form === 'json') progress(total);
    if (plan.form === 'json') emit('verifying conversion');
    let fileType: string;
    try {
      fileType = modelDetails(await readGguf(tmp, { maxArrayItems: FACTS_MAX_ARRAY_ITEMS })).fileType;
    } catch (err) {
      await rm(tmp, { force: true });
      throw new InternalError(`quantized model cannot be read: ${describeIoError(err)}`, { cause: err });
    }
    const blob = await this.store.adoptTempFile(tmp, pin);
    this.logger.log(`quantized ${label} to ${q.type} (${blob.digest})`);
    return { blob, fileType };
  }

  /**
   * Size of a quantization source, bytes.
   * @throws InternalError `cannot read the model to quantize: <errno text>` (no path).
   */
  private async sourceSize(path: string): Promise<number> {
    try {
      return (await stat(path)).size;
    } catch (err) {
      throw new InternalError(`cannot read the model to quantize: ${describeIoError(err)}`, { cause: err });
    }
  }
}
