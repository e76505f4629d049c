import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { UnsupportedCapabilityError } from '../../common/errors';
import { ResolvedModel } from '../../models';
import { Runner } from '../../runner';
import { ChatCommand, ChatMessage, GenerateCommand } from '../generation.types';
import { EffectiveOptions } from '../options';
import { fitPrompt, tokenizePrompt } from './fit';
import { formatGrammar } from './format';
import { goTemplateFor, renderGo } from './go-render';
import { toMediaPrompt, withImageMarkers } from './media';
import { assembleChatMessages, generateMessages } from './messages';
import { renderNative } from './native-render';
import { PreparedPrompt, PromptSource, RenderedPrompt } from './prompt.types';
import { NativeRenderOptions, thinkingEnabled } from './render-options';
import { GoTemplateRenderer, TEMPLATE_RENDERER, TemplateRenderer } from './template-renderer';

/** The render options of a chat request (tools, tool choice, thinking, format), shared by prompts and token counts. */
function chatRenderOptions(cmd: ChatCommand, model: ResolvedModel): NativeRenderOptions {
  return {
    tools: cmd.tools,
    toolChoice: cmd.toolChoice,
    think: cmd.think,
    thinking: thinkingEnabled(cmd.think, model),
    format: cmd.format,
  };
}

/**
 * The prompt stage (reference/ollama-api.md §4.4, §8, §9): turns a generate or chat command into the tokens to submit
 * for one loaded runner, which owns the template and the tokenizer — render (the Go template in rendered mode, else
 * the GGUF Jinja template through the runner in native mode) → tokenize → fit (Ollama's message dropping, then the
 * n_keep token truncation, or a 400 with `truncate: false`) → images (media markers) — with the grammar (format,
 * forced tool calls), stops and the output parser that go with the render. Called by CompletionService with the
 * runner of its lease, and by ChatService.countPromptTokens. Captures nothing of a request between calls.
 */
@Injectable()
export class PromptService {
  private readonly logger = new Logger(PromptService.name);
  /** Models for which the Go-template fallback was already logged. */
  private readonly templateFallbackLogged = new Set<string>();

  /** @param templates the Go-template engine (TEMPLATE_RENDERER); default: src/templates. */
  constructor(
    @Optional()
    @Inject(TEMPLATE_RENDERER)
    private readonly templates: TemplateRenderer = new GoTemplateRenderer(),
  ) {}

  /**
   * The prompt of `source` for `runner`: {@link prepareChat} or {@link prepareGenerate}.
   * @param options the request's effective options (num_keep for truncation).
   */
  prepare(
    source: PromptSource,
    model: ResolvedModel,
    runner: Runner,
    options: EffectiveOptions,
  ): Promise<PreparedPrompt> {
    return source.kind === 'chat'
      ? this.prepareChat(source.cmd, model, runner, options)
      : this.prepareGenerate(source.cmd, model, runner, options);
  }

  /**
   * A chat prompt (§3.3, §4.4): the assembled messages (assembleChatMessages) rendered and tokenized
   * ({@link renderChat}); when the prompt does not fit the slot, the oldest messages are dropped one at a time
   * (never system messages, never the last message) and the rest re-rendered, like Ollama's chatPrompt; if it still
   * does not fit, tokens are cut keeping the first num_keep (fitPrompt). With images no message is dropped and
   * nothing cut (the engine answers a prompt that does not fit with a 400). `growContext` implies `truncate: false`.
   * @throws InvalidRequestError `template error: …`, `invalid JSON schema in format: …`; ContextLengthExceededError
   *   (Ollama's prompt-too-long 400, with the prompt and context sizes) when it does not fit and may not be cut.
   */
  async prepareChat(
    cmd: ChatCommand,
    model: ResolvedModel,
    runner: Runner,
    options: EffectiveOptions,
  ): Promise<PreparedPrompt> {
    const messages = assembleChatMessages(cmd, model);
    if (model.template && !goTemplateFor(model.template, this.templates.engine())) this.noteTemplateFallback(model);
    // Images: the engine evaluates the text and images itself; no message dropping or truncation (too long → 400 there).
    if (messages.some((m) => m.images?.length)) return this.renderChat(cmd, model, runner, messages);
    let prepared = await this.renderChat(cmd, model, runner, messages);
    const truncate = cmd.growContext ? false : cmd.truncate;
    while (truncate !== false && prepared.tokens.length >= runner.slotContext) {
      const drop = messages.findIndex((m, i) => m.role !== 'system' && i < messages.length - 1);
      if (drop < 0) break;
      messages.splice(drop, 1);
      prepared = await this.renderChat(cmd, model, runner, messages);
    }
    const fitted = fitPrompt(prepared.tokens, runner, options, truncate);
    if (fitted.dropped > 0) {
      this.logger.warn(`truncating input prompt: ${prepared.tokens.length} tokens, limit ${runner.slotContext}`);
    }
    return { ...prepared, tokens: fitted.tokens };
  }

  /**
   * The prompt of a chat request as prepareChat renders it before any fitting (for count-tokens endpoints): the same
   * render + tokenize step, so a prompt that fits counts exactly the tokens chat submits (images: their media
   * markers count as text).
   * @throws InvalidRequestError as {@link prepareChat}.
   */
  countChat(cmd: ChatCommand, model: ResolvedModel, runner: Runner): Promise<PreparedPrompt> {
    return this.renderChat(cmd, model, runner, assembleChatMessages(cmd, model));
  }

  /**
   * The prompt of a generate request (§3.2, §8): `promptTokens` are detokenized into the prompt first; raw →
   * verbatim; `suffix` → fill-in-the-middle through the Go template's `.Prompt`/`.Suffix`; otherwise the messages of
   * generateMessages rendered with the Go template (rendered mode: request `template` or Modelfile TEMPLATE) or the
   * GGUF Jinja template (native mode), with the deprecated `context` detokenized in front. A model without any
   * template gets the prompt verbatim (Ollama's `{{ .Prompt }}`). `format` becomes a grammar in every mode; thinking
   * is split out where a template supports it. Too long: keep num_keep and drop from the middle, or 400 with
   * `truncate: false` (or `growContext`); with images nothing is cut.
   * @throws UnsupportedCapabilityError `<full name> does not support insert` when a suffix cannot be rendered;
   *   InvalidRequestError (template error, bad format schema, token ids outside the vocabulary);
   *   ContextLengthExceededError as {@link prepareChat}.
   */
  async prepareGenerate(
    cmd: GenerateCommand,
    model: ResolvedModel,
    runner: Runner,
    options: EffectiveOptions,
  ): Promise<PreparedPrompt> {
    if (cmd.promptTokens?.length) cmd = { ...cmd, prompt: await runner.detokenize(cmd.promptTokens) };
    const { text, prompt: extra } = await this.renderGenerate(cmd, model, runner);
    const media = toMediaPrompt(text, cmd.images ?? []);
    if (media) {
      // Images are evaluated by the engine from the text (no truncation: a prompt that does not fit is a 400 there).
      return { ...extra, tokens: await tokenizePrompt(runner, media.prompt), media };
    }
    const tokens = await tokenizePrompt(runner, text);
    const fitted = fitPrompt(tokens, runner, options, cmd.growContext ? false : cmd.truncate);
    if (fitted.dropped > 0) {
      this.logger.warn(
        `truncating input prompt: ${tokens.length} tokens, limit ${runner.slotContext}, kept ${fitted.tokens.length}`,
      );
    }
    return { ...extra, tokens: fitted.tokens };
  }

  /**
   * Logs (once per model) that a Go TEMPLATE (Modelfile or request `template`) is present but no Go-template engine
   * is available (TEMPLATE_RENDERER's engine() gave none), so the GGUF Jinja template is used instead (native mode).
   */
  noteTemplateFallback(model: ResolvedModel): void {
    if (this.templateFallbackLogged.has(model.manifestDigest)) return;
    this.templateFallbackLogged.add(model.manifestDigest);
    this.logger.warn(`${model.shortName}: no Go template engine available; using the GGUF chat template instead`);
  }

  /**
   * THE render + tokenize step of a chat prompt, shared by prepareChat and countChat so both see the same tokens:
   * rendered mode with the model's Go TEMPLATE when it has one (and the engine is available), else native mode (GGUF
   * Jinja through llama.cpp common/chat), with the request's tools, tool choice, thinking and format (§8.1);
   * tokenized like llama.cpp's server (tokenizePrompt: special tokens added and parsed). Messages with images get
   * `[img-N]` markers turned into media markers (`media`; `tokens` then only count the text). No fitting.
   */
  private async renderChat(
    cmd: ChatCommand,
    model: ResolvedModel,
    runner: Runner,
    messages: ChatMessage[],
  ): Promise<PreparedPrompt> {
    const opts = chatRenderOptions(cmd, model);
    const go = goTemplateFor(model.template, this.templates.engine());
    const images = messages.flatMap((m) => m.images ?? []);
    const r = go
      ? renderGo(go.api, go.template, runner, messages, opts)
      : await renderNative(runner, images.length > 0 ? withImageMarkers(messages) : messages, opts);
    const media = toMediaPrompt(r.text, images);
    if (media) return { ...r.prompt, tokens: await tokenizePrompt(runner, media.prompt), media };
    return { ...r.prompt, tokens: await tokenizePrompt(runner, r.text) };
  }

  /** The text of a generate prompt before tokenizing, with the render's grammar, stops and parser (see prepareGenerate). */
  private async renderGenerate(cmd: GenerateCommand, model: ResolvedModel, runner: Runner): Promise<RenderedPrompt> {
    const formatOnly = () =>
      cmd.format ? { grammar: formatGrammar(cmd.format, (s) => runner.jsonSchemaToGrammar(s)) } : {};
    if (cmd.raw) return { text: cmd.prompt, prompt: formatOnly() };
    const templateText = cmd.template || model.template;
    const go = goTemplateFor(templateText, this.templates.engine());
    if (templateText && !go) this.noteTemplateFallback(model);
    const opts = { think: cmd.think, thinking: thinkingEnabled(cmd.think, model), format: cmd.format };
    let r: RenderedPrompt;
    if (cmd.suffix) {
      if (!go) throw new UnsupportedCapabilityError(`${model.name.toFullString()} does not support insert`, 'insert');
      r = renderGo(go.api, go.template, runner, [], { ...opts, fim: { prompt: cmd.prompt, suffix: cmd.suffix } });
    } else {
      const messages = generateMessages(cmd, model);
      if (go) r = renderGo(go.api, go.template, runner, messages, opts);
      else if (runner.info.hasChatTemplate) r = await renderNative(runner, withImageMarkers(messages), opts);
      else r = { text: cmd.prompt, prompt: formatOnly() };
    }
    if (cmd.context && cmd.context.length > 0) return { ...r, text: (await runner.detokenize(cmd.context)) + r.text };
    return r;
  }
}
