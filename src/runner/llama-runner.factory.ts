import { Inject, Injectable, Logger } from '@nestjs/common';
import type { NativeBinding } from '../../binding';
import { ModelLoadError } from '../common/errors';
import { NATIVE_BINDING, NativeBindingLoader } from '../native';
import { LlamaRunner } from './llama.runner';
import { flashAttentionNote } from './context-params';
import { machinePhysicalCores } from './cpu-threads';
import { Runner, RunnerCreateOptions, RunnerFactory, RunnerSpec } from './runner';

/** The production RunnerFactory: loads the addon on first use and creates LlamaRunners. */
@Injectable()
export class LlamaRunnerFactory implements RunnerFactory {
  private readonly logger = new Logger(LlamaRunnerFactory.name);

  /** Reads the CPU topology (sysfs, synchronous, remembered) here at start-up, so that no load reads it on a request. */
  constructor(@Inject(NATIVE_BINDING) private readonly loadBinding: NativeBindingLoader) {
    machinePhysicalCores();
  }

  async create(spec: RunnerSpec, options: RunnerCreateOptions = {}): Promise<Runner> {
    let binding: NativeBinding;
    try {
      binding = this.loadBinding();
    } catch (err) {
      throw new ModelLoadError((err as Error).message, { cause: err });
    }
    const started = Date.now();
    const runner = await LlamaRunner.load(binding, spec, options.threads, options.onProgress);
    this.logger.log(
      `loaded ${spec.modelPath} (num_ctx ${spec.numCtx}${spec.kvUnified ? ' shared by' : ' ×'} ${spec.numParallel} ` +
        `slots${flashAttentionNote(spec, runner.info)}) in ${Date.now() - started} ms`,
    );
    return runner;
  }
}
