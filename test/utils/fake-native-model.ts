/** FakeBinding's `Model` (test/utils/fake-binding.ts): char-code tokenizer, ChatML template, fake output parser. */
import type {
  NativeChatMessage,
  NativeChatParsed,
  NativeChatRender,
  NativeChatRequest,
  NativeChatTemplateOptions,
  NativeModel,
  NativeModelInfo,
  NativeModelParams,
} from '../../binding';
import type { FakeBinding } from './fake-binding';

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
      parser: {
        parse: (text, isPartial) => fakeParse(text, isPartial, thinking, hasTools),
        // Frontier 0: NativeOutputParser parses the whole text on every piece (the fake has no frontier to report).
        parseStep: (text) => ({ ...fakeParse(text, true, thinking, hasTools), frontier: 0 }),
        stepDelimiters: () => [],
      },
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

  /** Adapter paths loaded with loadLora (the fake applies none: it only records them). */
  readonly loadedLoras = new Set<string>();

  async loadLora(path: string): Promise<void> {
    await Promise.resolve();
    this.loadedLoras.add(path);
  }

  async unloadLora(path: string): Promise<'unloaded' | 'absent'> {
    await Promise.resolve();
    return this.loadedLoras.delete(path) ? 'unloaded' : 'absent';
  }

  loras(): string[] {
    return [...this.loadedLoras];
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
