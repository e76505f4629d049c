import type {
  NativeBinding,
  NativeChatMessage,
  NativeChatParsed,
  NativeChatRender,
  NativeChatRequest,
  NativeChatTemplateOptions,
  NativeContext,
  NativeContextParams,
  NativeMemoryEntry,
  NativeContextStats,
  NativeErrorCode,
  NativeEvent,
  NativeModel,
  NativeModelInfo,
  NativeModelParams,
  NativeQuantizeParams,
  NativeStopReason,
  NativeTaskParams,
  NativeTokenLogprob,
} from '../../binding';
import { REPO_ROOT } from '../../src/config';
import { llamadVersion, processAddonHost } from '../../src/native/addon-candidates';
import { LLAMAD_ADDON_ABI } from '../../src/native/addon-identity';

/** Prompt length of a task in fake tokens: its tokens, or for a media task one per prompt character plus 4 per image. */
function fakePromptLength(params: NativeTaskParams): number {
  return params.images ? (params.prompt ?? '').length + 4 * params.images.length : params.tokens.length;
}
/** What a fake task does: emit these pieces, then end with `reason` (or fail with `error` after the pieces). */
export interface FakeScript {
  /** Text pieces, one token event each (token ids are 1000 + index). */
  pieces: string[];
  /** How the task ends when it is not cancelled (default 'eog'). */
  reason?: Exclude<NativeStopReason, 'cancelled'>;
  /** The stop string reported on `done` (set `reason: 'stop'` too, as the addon does). */
  stopString?: string;
  /** Fail with an `error` event after the pieces instead of `done`. */
  error?: { code: NativeErrorCode; message: string };
  /** Milliseconds between events (default 0: one macrotask each). */
  delayMs?: number;
}

/** The fake renderChat/parser behaviour (what a GGUF Jinja template would do through llama.cpp common/chat). */
export interface FakeChatBehaviour {
  /** chatCapabilities(): what the fake Jinja template supports. */
  tools: boolean;
  thinking: boolean;
  /** Grammar returned when tools are given (lazy, triggered by `<tool_call>`). */
  toolGrammar: string;
  /** Extra stops reported by renderChat. */
  additionalStops: string[];
}

/** A native error the way the addon throws them (Error + code). */
export function nativeError(code: NativeErrorCode, message: string): Error & { code: NativeErrorCode } {
  return Object.assign(new Error(message), { code });
}

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

/** The fake `Model`: char-code tokenizer, ChatML template, configurable load failure. */
export class FakeModelHandle implements NativeModel {
  loaded = false;
  disposed = false;

  constructor(
    private readonly binding: FakeBinding,
    readonly path: string,
    readonly params?: NativeModelParams,
  ) {}

  async load(): Promise<void> {
    await Promise.resolve();
    if (this.binding.loadDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.binding.loadDelayMs));
    if (this.binding.loadError) throw this.binding.loadError;
    this.loaded = true;
  }

  abortLoad(): void {}

  info(): NativeModelInfo {
    return {
      description: 'fake 1M F16',
      nParams: 1_000_000,
      size: 2_000_000,
      nCtxTrain: this.binding.nCtxTrain,
      nEmbd: 64,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nVocab: 65536,
      hasEncoder: false,
      hasDecoder: true,
      bos: 1,
      eos: 2,
      addBos: true,
      addEos: false,
    };
  }

  metadata(): Record<string, string> {
    const meta: Record<string, string> = { 'general.architecture': 'llama' };
    if (this.binding.poolingType !== undefined) meta['llama.pooling_type'] = String(this.binding.poolingType);
    return meta;
  }

  chatTemplate(): string | null {
    return this.binding.hasChatTemplate ? '{{ chatml }}' : null;
  }

  applyChatTemplate(messages: NativeChatMessage[], options?: NativeChatTemplateOptions): string {
    let out = messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('');
    if (options?.addGenerationPrompt ?? true) out += '<|im_start|>assistant\n';
    return out;
  }

  /**
   * ChatML rendering with the fake's capabilities: tools listed in a `<tools>` system block, assistant tool calls as
   * `<tool_call>{json}</tool_call>`, reasoning as `<think>…</think>`; `enableThinking` opens `<think>\n` after the
   * generation prompt. The parser splits `<think>…</think>` (when thinking) and `<tool_call>{…}</tool_call>` blocks.
   */
  renderChat(request: NativeChatRequest): NativeChatRender {
    this.binding.renderRequests.push(request);
    const chat = this.binding.chat;
    let prompt = '';
    if (request.tools && request.tools.length > 0) {
      prompt += `<|im_start|>system\n<tools>${request.tools.map((t) => t.name).join(',')}</tools><|im_end|>\n`;
    }
    for (const m of request.messages) {
      let content = m.content;
      if (m.reasoningContent) content = `<think>${m.reasoningContent}</think>${content}`;
      for (const c of m.toolCalls ?? []) {
        content += `<tool_call>{"name":"${c.name}","arguments":${c.arguments}}</tool_call>`;
      }
      const role = m.role === 'tool' ? `tool ${m.toolName ?? ''}` : m.role;
      prompt += `<|im_start|>${role}\n${content}<|im_end|>\n`;
    }
    const thinking = Boolean(request.enableThinking && chat.thinking);
    if (request.addGenerationPrompt ?? true) prompt += `<|im_start|>assistant\n${thinking ? '<think>\n' : ''}`;
    const hasTools = Boolean(request.tools && request.tools.length > 0 && chat.tools);
    let grammar = '';
    if (request.jsonSchema) grammar = this.binding.jsonSchemaToGrammar(request.jsonSchema);
    else if (hasTools) grammar = chat.toolGrammar;
    return {
      prompt,
      format: hasTools ? 'Hermes 2 Pro' : 'Content-only',
      grammar,
      grammarLazy: hasTools && !request.jsonSchema,
      grammarTriggers: hasTools && !request.jsonSchema ? [{ type: 'word', value: '<tool_call>' }] : [],
      preservedTokens: hasTools ? ['<tool_call>', '</tool_call>'] : [],
      additionalStops: [...chat.additionalStops],
      thinking,
      generationPrompt: thinking ? '<think>\n' : '',
      parser: { parse: (text, isPartial) => fakeParse(text, isPartial, thinking, hasTools) },
    };
  }

  chatCapabilities(): { tools: boolean; thinking: boolean } {
    return { tools: this.binding.chat.tools, thinking: this.binding.chat.thinking };
  }

  /** The *Async variants: the synchronous result after a macrotask (as the addon's pool jobs), errors as rejections. */
  private async later<T>(fn: () => T): Promise<T> {
    await new Promise((resolve) => setImmediate(resolve));
    return fn();
  }

  tokenizeAsync(text: string, addSpecial: boolean): Promise<Int32Array> {
    return this.later(() => this.tokenize(text, addSpecial));
  }

  detokenizeAsync(tokens: Int32Array): Promise<string> {
    return this.later(() => this.detokenize(tokens));
  }

  applyChatTemplateAsync(messages: NativeChatMessage[], options?: NativeChatTemplateOptions): Promise<string> {
    return this.later(() => this.applyChatTemplate(messages, options));
  }

  renderChatAsync(request: NativeChatRequest): Promise<NativeChatRender> {
    return this.later(() => this.renderChat(request));
  }

  tokenize(text: string, addSpecial: boolean): Int32Array {
    const ids = Array.from(text, (c) => c.charCodeAt(0));
    return Int32Array.from(addSpecial ? [1, ...ids] : ids);
  }

  detokenize(tokens: Int32Array): string {
    return Array.from(tokens)
      .filter((t) => t >= 32 && t < 65536)
      .map((t) => String.fromCharCode(t))
      .join('');
  }

  async dispose(): Promise<void> {
    await Promise.resolve();
    this.disposed = true;
  }
}

/** The fake output parser: reasoning up to `</think>` (when thinking), then content with `<tool_call>` blocks. */
function fakeParse(text: string, isPartial: boolean, thinking: boolean, tools: boolean): NativeChatParsed {
  let reasoningContent = '';
  let rest = text;
  if (thinking) {
    const end = rest.indexOf('</think>');
    if (end < 0) return { content: '', reasoningContent: rest, toolCalls: [] };
    reasoningContent = rest.slice(0, end);
    rest = rest.slice(end + '</think>'.length).replace(/^\s+/, '');
  }
  const toolCalls: NativeChatParsed['toolCalls'] = [];
  if (!tools) return { content: rest, reasoningContent, toolCalls };
  let content = '';
  let i = 0;
  for (;;) {
    const start = rest.indexOf('<tool_call>', i);
    if (start < 0) {
      content += rest.slice(i);
      break;
    }
    content += rest.slice(i, start);
    const end = rest.indexOf('</tool_call>', start);
    if (end < 0) {
      if (!isPartial) content += rest.slice(start);
      break;
    }
    const call = JSON.parse(rest.slice(start + '<tool_call>'.length, end)) as { name: string; arguments: unknown };
    toolCalls.push({ id: `fake_${toolCalls.length}`, name: call.name, arguments: JSON.stringify(call.arguments) });
    i = end + '</tool_call>'.length;
  }
  return { content, reasoningContent, toolCalls };
}

interface FakeTask {
  id: number;
  params: NativeTaskParams;
  onEvent: (e: NativeEvent) => void;
  timer?: NodeJS.Timeout;
  done: boolean;
  /** Tokens emitted so far (the fake's KV cells: prompt + emitted). */
  emitted?: number;
}

/**
 * Fake logprobs of the i-th token when the task asks for them: logprob -(i+1)/10, bytes = UTF-8 of the piece, and
 * `task.logprobs` alternatives (`alt0`, `alt1`, …) with decreasing logprobs.
 */
function fakeLogprobs(
  task: NativeTaskParams,
  piece: string,
  i: number,
): { bytes?: Uint8Array; logprob?: number; topLogprobs?: NativeTokenLogprob[] } {
  if (task.logprobs === undefined) return {};
  const enc = new TextEncoder();
  return {
    bytes: enc.encode(piece),
    logprob: -(i + 1) / 10,
    topLogprobs: Array.from({ length: task.logprobs }, (_, k) => ({
      token: 2000 + k,
      bytes: enc.encode(`alt${k}`),
      logprob: -(i + 1) / 10 - k,
    })),
  };
}

/** The fake `Context`: `nParallel` slots, a FIFO of waiting tasks, scripted events, cancel and dispose. */
export class FakeContextHandle implements NativeContext {
  private nextId = 1;
  private readonly active = new Map<number, FakeTask>();
  private readonly queue: FakeTask[] = [];
  /** embed() jobs in flight: id → cancel. */
  private readonly embedJobs = new Map<number, () => void>();
  disposed = false;

  constructor(
    private readonly binding: FakeBinding,
    readonly model: NativeModel,
    readonly params: NativeContextParams,
  ) {}

  /** Tokens a slot may hold: nCtx shared by the slots (kvUnified), else nCtx / slots. */
  private get slotContext(): number {
    return this.params.kvUnified ? this.params.nCtx : Math.floor(this.params.nCtx / this.slots);
  }

  private get slots(): number {
    return this.params.nParallel ?? 1;
  }

  /** A CPU build's breakdown: weights and a KV cache of 64 bytes a cell, all in host memory. */
  memory(): NativeMemoryEntry[] {
    if (this.disposed) throw nativeError('LLAMA_DISPOSED', 'context is disposed');
    return [
      { buffer: 'CPU', device: 'CPU', host: true, model: 1_000_000, context: this.params.nCtx * 64, compute: 4096 },
    ];
  }

  /**
   * Embeds on an embedding context: one `binding.embedVector` per input, recorded in `binding.embedCalls`. Takes
   * `binding.embedDelayMs`; `onJobId` gets the id that cancel() accepts (it then rejects with LLAMA_CANCELLED).
   */
  async embed(inputs: Int32Array[], onJobId?: (jobId: number) => void): Promise<Float32Array[]> {
    if (inputs.length > 0 && onJobId) {
      const id = this.nextId++;
      onJobId(id);
      let cancelled = false;
      let wake = () => {};
      this.embedJobs.set(id, () => {
        cancelled = true;
        wake();
      });
      try {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, this.binding.embedDelayMs);
        });
      } finally {
        this.embedJobs.delete(id);
      }
      if (cancelled) throw nativeError('LLAMA_CANCELLED', 'embedding cancelled');
    } else if (this.binding.embedDelayMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, this.binding.embedDelayMs));
    }
    await Promise.resolve();
    if (this.disposed) throw nativeError('LLAMA_DISPOSED', 'context is disposed');
    if (!this.params.embeddings) throw nativeError('LLAMA_INVALID_ARGUMENT', 'not an embedding context');
    const slotCtx = this.slotContext;
    for (const input of inputs) {
      if (input.length === 0) throw nativeError('LLAMA_INVALID_ARGUMENT', 'empty input');
      if (input.length > slotCtx || input.length > (this.params.nUbatch ?? this.params.nBatch ?? 512)) {
        throw nativeError('LLAMA_EXCEED_CONTEXT', `input of ${input.length} tokens does not fit`);
      }
    }
    this.binding.embedCalls.push(inputs);
    return inputs.map((t) => this.binding.embedVector(t));
  }

  submit(params: NativeTaskParams, onEvent: (event: NativeEvent) => void): number {
    if (this.disposed) throw nativeError('LLAMA_DISPOSED', 'context is disposed');
    if (this.params.embeddings) throw nativeError('LLAMA_INVALID_ARGUMENT', 'embedding context cannot generate');
    const slotCtx = this.slotContext;
    const promptLength = fakePromptLength(params);
    if (promptLength === 0) throw nativeError('LLAMA_INVALID_ARGUMENT', 'empty prompt');
    if (promptLength >= slotCtx) {
      throw nativeError('LLAMA_EXCEED_CONTEXT', `prompt of ${promptLength} tokens does not fit ${slotCtx}`);
    }
    this.binding.submitted.push(params);
    const task: FakeTask = { id: this.nextId++, params, onEvent, done: false };
    this.queue.push(task);
    setImmediate(() => this.pump());
    return task.id;
  }

  private pump(): void {
    while (this.active.size < this.slots && this.queue.length > 0) {
      const task = this.queue.shift()!;
      if (task.done) continue;
      this.active.set(task.id, task);
      this.run(task);
    }
  }

  private run(task: FakeTask): void {
    const script = this.binding.script(task.params);
    const limit = task.params.nPredict >= 0 ? task.params.nPredict : Infinity;
    let i = 0;
    const step = () => {
      if (task.done) return;
      if (i < script.pieces.length && i < limit) {
        task.emitted = i + 1;
        task.onEvent({
          type: 'token',
          taskId: task.id,
          text: script.pieces[i],
          token: 1000 + i,
          ...fakeLogprobs(task.params, script.pieces[i], i),
        });
        i++;
        task.timer = setTimeout(step, script.delayMs ?? 0);
        return;
      }
      if (script.error && i >= script.pieces.length) {
        this.finish(task, { type: 'error', taskId: task.id, ...script.error });
        return;
      }
      const reason: NativeStopReason = i >= limit && i < script.pieces.length ? 'length' : (script.reason ?? 'eog');
      this.finish(task, {
        type: 'done',
        taskId: task.id,
        reason,
        ...(reason !== 'length' && script.stopString !== undefined ? { stopString: script.stopString } : {}),
        timings: {
          promptN: fakePromptLength(task.params),
          promptTotal: fakePromptLength(task.params),
          promptNs: 1_000_000,
          predictedN: i,
          predictedNs: 2_000_000 * i,
        },
      });
    };
    task.timer = setTimeout(step, script.delayMs ?? 0);
  }

  private finish(task: FakeTask, event: NativeEvent): void {
    if (task.done) return;
    task.done = true;
    if (task.timer) clearTimeout(task.timer);
    this.active.delete(task.id);
    task.onEvent(event);
    setImmediate(() => this.pump());
  }

  cancel(taskId: number): void {
    this.binding.cancelled.push(taskId);
    const embedJob = this.embedJobs.get(taskId);
    if (embedJob) {
      embedJob();
      return;
    }
    const task = this.active.get(taskId) ?? this.queue.find((t) => t.id === taskId);
    if (!task || task.done) return;
    const end = () =>
      this.finish(task, {
        type: 'done',
        taskId,
        reason: 'cancelled',
        timings: { promptN: 0, promptTotal: 0, promptNs: 0, predictedN: 0, predictedNs: 0 },
      });
    if (this.binding.cancelDelayMs > 0) setTimeout(end, this.binding.cancelDelayMs);
    else setImmediate(end);
  }

  /** Threads set by setThreads (the last call), else params.nThreads, else 0. */
  threads = 0;

  setThreads(nThreads: number): void {
    if (this.disposed) throw Object.assign(new Error('context is disposed'), { code: 'LLAMA_DISPOSED' });
    this.threads = nThreads;
  }

  stats(): NativeContextStats {
    return {
      nCtx: this.params.nCtx,
      nCtxSlot: this.slotContext,
      nParallel: this.slots,
      activeSlots: this.active.size,
      queuedTasks: this.queue.filter((t) => !t.done).length,
      embedJobs: this.embedJobs.size,
      decodeSteps: 0,
      graphsReused: 0,
      kvSize: 0,
      kvUnified: this.params.kvUnified ?? false,
      kvCellsUsed: [...this.active.values()].reduce((sum, t) => sum + fakePromptLength(t.params) + (t.emitted ?? 0), 0),
      kvCellsCached: 0,
      pausedSlots: 0,
      ramCacheEntries: 0,
      ramCacheBytes: 0,
      ramCacheHits: 0,
      ramCacheTokens: 0,
      nThreads: this.threads || (this.params.nThreads ?? 0),
      draftTokens: 0,
      draftAccepted: 0,
    };
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    for (const task of [...this.active.values(), ...this.queue]) {
      this.finish(task, {
        type: 'done',
        taskId: task.id,
        reason: 'cancelled',
        timings: { promptN: 0, promptTotal: 0, promptNs: 0, predictedN: 0, predictedNs: 0 },
      });
    }
    await Promise.resolve();
  }
}
