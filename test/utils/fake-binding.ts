import type {
  NativeBinding,
  NativeChatRequest,
  NativeContext,
  NativeContextParams,
  NativeModel,
  NativeModelParams,
  NativeQuantizeParams,
  NativeTaskParams,
} from '../../binding';
import { REPO_ROOT } from '../../src/config';
import { llamadVersion, processAddonHost } from '../../src/native/addon-candidates';
import { LLAMAD_ADDON_ABI } from '../../src/native/addon-identity';
import { FakeContextHandle } from './fake-native-context';
import { FakeModelHandle } from './fake-native-model';
import { nativeError, type FakeChatBehaviour, type FakeScript } from './fake-native-script';

export { FakeContextHandle } from './fake-native-context';
export { FakeModelHandle } from './fake-native-model';
export { nativeError, type FakeChatBehaviour, type FakeScript } from './fake-native-script';

/**
 * A scripted stand-in for the native addon (binding.d.ts), for tests that must run without a model:
 * - tokenize: one token per UTF-16 code unit (its char code), BOS id 1 prepended when `addSpecial`;
 * - applyChatTemplate: ChatML text (`<|im_start|>role\ncontent<|im_end|>\n` … `<|im_start|>assistant\n`);
 * - Context: `nParallel` slots, tasks beyond them wait FIFO; each task replays `script(task)` asynchronously;
 *   cancel() ends a task with `done` reason 'cancelled' and frees its slot.
 * Everything submitted and cancelled is recorded for assertions.
 */
export class FakeBinding implements NativeBinding {
  /** As a matching addon: llamad's own version and ABI (a fake is never checked by loadBinding). */
  readonly version = llamadVersion(processAddonHost(REPO_ROOT)) ?? '';
  readonly abi = LLAMAD_ADDON_ABI;
  /** Decides what each task emits. */
  script: (task: NativeTaskParams) => FakeScript = () => ({ pieces: ['Hello', ',', ' world'] });
  /** Make `load()` fail with this error. */
  loadError?: Error;
  /** Milliseconds `load()` takes (default 0: one microtask). */
  loadDelayMs = 0;
  /** Make `new Context()` throw this error. */
  contextError?: Error;
  /** Whether the fake model has a chat template. */
  hasChatTemplate = true;
  /** Training context reported by info(). */
  nCtxTrain = 2048;
  /** `<arch>.pooling_type` in metadata() (an embedding model) when set. */
  poolingType?: number;
  /** Embedding width of the fake model (n_embd). */
  nEmbd = 8;
  /** The vector embed() returns for one input (unnormalized); default: derived from the token ids. */
  embedVector: (tokens: Int32Array) => Float32Array = (tokens) => {
    const v = new Float32Array(this.nEmbd);
    tokens.forEach((t, i) => (v[(t + i) % this.nEmbd] += 1 + (t % 7)));
    return v;
  };
  /** Milliseconds an embed() call takes (default 0: one microtask); cancel(jobId) ends it early with LLAMA_CANCELLED. */
  embedDelayMs = 0;
  /**
   * Milliseconds between cancel(taskId) and the task's `done` 'cancelled' event that frees its slot (default 0: the
   * next setImmediate). The real engine frees it within one decode step.
   */
  cancelDelayMs = 0;
  /** renderChat / chatCapabilities behaviour. */
  chat: FakeChatBehaviour = { tools: true, thinking: false, toolGrammar: 'root ::= tool-call', additionalStops: [] };

  readonly renderRequests: NativeChatRequest[] = [];
  readonly schemas: string[] = [];
  /** Every embed() call: the inputs of each call. */
  readonly embedCalls: Int32Array[][] = [];

  readonly submitted: NativeTaskParams[] = [];
  readonly cancelled: number[] = [];
  readonly models: FakeModelHandle[] = [];
  readonly contexts: FakeContextHandle[] = [];
  readonly contextParams: NativeContextParams[] = [];

  readonly Model: new (path: string, params?: NativeModelParams) => NativeModel;
  readonly Context: NativeBinding['Context'];

  constructor() {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const binding = this;
    this.Model = class extends FakeModelHandle {
      constructor(path: string, params?: NativeModelParams) {
        super(binding, path, params);
        binding.models.push(this);
      }
    };
    this.Context = class extends FakeContextHandle {
      constructor(model: NativeModel, params: NativeContextParams) {
        if (binding.contextError) throw binding.contextError;
        super(binding, model, params);
        binding.contexts.push(this);
        binding.contextParams.push(params);
      }

      /** As the addon: the same creation after a macrotask, every failure a rejection. */
      static async create(model: NativeModel, params: NativeContextParams): Promise<NativeContext> {
        await new Promise((resolve) => setImmediate(resolve));
        return new this(model, params);
      }
    };
  }

  systemInfo(): string {
    return 'FAKE = 1';
  }

  devices(): string[] {
    return ['CPU'];
  }

  setLogger(): void {}

  /** Fake json_schema_to_grammar: `root ::= <schema>` (schema compacted); throws LLAMA_INVALID_ARGUMENT on bad JSON. */
  jsonSchemaToGrammar(schema: string): string {
    let parsed: unknown;
    try {
      parsed = JSON.parse(schema);
    } catch {
      throw nativeError('LLAMA_INVALID_ARGUMENT', 'invalid JSON schema');
    }
    if (typeof parsed !== 'object' || parsed === null) {
      throw nativeError('LLAMA_INVALID_ARGUMENT', 'schema not an object');
    }
    this.schemas.push(schema);
    return `root ::= ${JSON.stringify(parsed)}`;
  }

  quantize(_input: string, _output: string, _params: NativeQuantizeParams): Promise<void> {
    return Promise.reject(nativeError('LLAMA_QUANTIZE_FAILED', 'fake binding cannot quantize'));
  }

  /** Tasks currently holding a slot, over every context. */
  activeTasks(): number {
    return this.contexts.reduce((n, c) => n + c.stats().activeSlots, 0);
  }
}
