import { Inject, Injectable, Logger } from '@nestjs/common';
import { Observable } from 'rxjs';
import type { NativeBinding, NativeContext, NativeEvent, NativeModel, NativeTaskParams } from '../../../binding';
import { DaemonError, InternalError, ModelLoadError, RequestCancelledError } from '../../common/errors';
import { mapNativeError, NATIVE_BINDING, NativeBindingLoader } from '../../native';
import {
  Runner,
  RunnerChatMessage,
  RunnerEvent,
  RunnerFactory,
  RunnerModelInfo,
  RunnerRequest,
  RunnerSpec,
} from './runner';

/** A failure while loading is a load error unless the addon said something more specific (e.g. out of memory). */
function asLoadError(err: unknown): DaemonError {
  const mapped = mapNativeError(err);
  return mapped instanceof InternalError ? new ModelLoadError(mapped.message, { cause: err }) : mapped;
}

/**
 * A Runner over the native addon: one Model and one Context with `numParallel` slots (n_ctx = numCtx × numParallel).
 * All decoding happens on the context's own native thread; this class only submits tasks and relays events, which
 * arrive on the JS thread in order (binding.d.ts NativeEvent).
 */
export class LlamaRunner implements Runner {
  private closed: Promise<void> | undefined;

  private constructor(
    readonly spec: RunnerSpec,
    readonly info: RunnerModelInfo,
    private readonly model: NativeModel,
    private readonly context: NativeContext,
  ) {}

  /**
   * Loads the weights and creates the context.
   * @throws ModelLoadError (unloadable file, unknown architecture, context creation failure, missing addon),
   *   InsufficientMemoryError.
   */
  static async load(binding: NativeBinding, spec: RunnerSpec): Promise<LlamaRunner> {
    let model: NativeModel;
    try {
      model = new binding.Model(spec.modelPath, {
        ...(spec.numGpu >= 0 ? { nGpuLayers: spec.numGpu } : {}),
        ...(spec.useMmap !== undefined ? { useMmap: spec.useMmap } : {}),
      });
      await model.load();
    } catch (err) {
      throw asLoadError(err);
    }
    try {
      const native = model.info();
      const context = new binding.Context(model, {
        nCtx: spec.numCtx * spec.numParallel,
        nBatch: spec.numBatch,
        nParallel: spec.numParallel,
        ...(spec.numThread > 0 ? { nThreads: spec.numThread } : {}),
      });
      const info: RunnerModelInfo = {
        trainContext: native.nCtxTrain,
        addBos: native.addBos,
        bos: native.bos,
        hasChatTemplate: model.chatTemplate() !== null,
      };
      return new LlamaRunner(spec, info, model, context);
    } catch (err) {
      await model.dispose().catch(() => undefined);
      throw asLoadError(err);
    }
  }

  get slotContext(): number {
    return this.spec.numCtx;
  }

  generate(request: RunnerRequest): Observable<RunnerEvent> {
    return new Observable<RunnerEvent>((subscriber) => {
      let finished = false;
      let taskId: number | undefined;
      const task: NativeTaskParams = {
        tokens: Int32Array.from(request.tokens),
        nPredict: request.numPredict,
        sampling: { ...request.sampling },
        stop: request.stop,
      };
      const onEvent = (event: NativeEvent) => {
        if (finished) return;
        switch (event.type) {
          case 'token':
            subscriber.next({ kind: 'token', text: event.text, token: event.token });
            break;
          case 'done':
            finished = true;
            if (event.reason === 'cancelled') {
              subscriber.error(new RequestCancelledError());
              return;
            }
            subscriber.next({
              kind: 'done',
              reason: event.reason === 'length' ? 'length' : 'stop',
              timings: {
                promptEvalCount: event.timings.promptN,
                promptEvalDurationNs: event.timings.promptNs,
                evalCount: event.timings.predictedN,
                evalDurationNs: event.timings.predictedNs,
              },
            });
            subscriber.complete();
            break;
          case 'error':
            finished = true;
            subscriber.error(mapNativeError({ code: event.code, message: event.message }));
            break;
        }
      };
      try {
        taskId = this.context.submit(task, onEvent);
      } catch (err) {
        finished = true;
        subscriber.error(mapNativeError(err));
      }
      return () => {
        if (!finished && taskId !== undefined) {
          finished = true;
          this.context.cancel(taskId);
        }
      };
    });
  }

  tokenize(text: string, options: { addSpecial: boolean; parseSpecial: boolean }): number[] {
    try {
      return Array.from(this.model.tokenize(text, options.addSpecial, options.parseSpecial));
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  detokenize(tokens: number[]): string {
    try {
      return this.model.detokenize(Int32Array.from(tokens), false, true);
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  applyChatTemplate(messages: RunnerChatMessage[], options: { addGenerationPrompt: boolean }): string {
    try {
      return this.model.applyChatTemplate(messages, { addGenerationPrompt: options.addGenerationPrompt });
    } catch (err) {
      throw mapNativeError(err);
    }
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      await this.context.dispose();
      await this.model.dispose();
    })();
    return this.closed;
  }
}

/** The production RunnerFactory: loads the addon on first use and creates LlamaRunners. */
@Injectable()
export class LlamaRunnerFactory implements RunnerFactory {
  private readonly logger = new Logger(LlamaRunnerFactory.name);

  constructor(@Inject(NATIVE_BINDING) private readonly loadBinding: NativeBindingLoader) {}

  async create(spec: RunnerSpec): Promise<Runner> {
    let binding: NativeBinding;
    try {
      binding = this.loadBinding();
    } catch (err) {
      throw new ModelLoadError((err as Error).message, { cause: err });
    }
    const started = Date.now();
    const runner = await LlamaRunner.load(binding, spec);
    this.logger.log(
      `loaded ${spec.modelPath} (num_ctx ${spec.numCtx} × ${spec.numParallel} slots) in ${Date.now() - started} ms`,
    );
    return runner;
  }
}
