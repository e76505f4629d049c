import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { UnsupportedCapabilityError } from '../../common/errors';
import { ResolvedModel } from '../../models';
import { Runner } from '../../runner';
import { ChatCommand, GenerateCommand } from '../generation.types';
import { EffectiveOptions } from '../options';
import { ChatProbe, ChatRenderer } from './chat-render';
import { fitPrompt, tokenizePrompt } from './fit';
import { dropOldest, droppableCount, fewestDrops } from './fit-messages';
import { goTemplateFor, renderGo, renderGoTextAsync } from './go-render';
import { formatGrammar, GrammarBudget, throwIfCancelled } from './grammar-budget';
import { foldAudio } from './audio';
import { toMediaPrompt, withImageMarkers } from './media';
import { assembleChatMessages, generateMessages } from './messages';
import { renderNative } from './native-render';
import { PreparedPrompt, PromptSource, RenderedPrompt } from './prompt.types';
import { thinkingEnabled } from './render-options';
import { GoTemplateRenderer, TEMPLATE_RENDERER, TemplateRenderer } from './template-renderer';

/**
 * The prompt stage (reference/ollama-api.md §4.4, §8, §9): turns a generate or chat command into the tokens to submit
 * for one loaded runner, which owns the template and the tokenizer — render (the Go template in rendered mode, else
 * the GGUF Jinja template through the runner in native mode) → tokenize → fit (Ollama's message dropping, found by a
 * binary search, fit-messages.ts; then the n_keep token truncation, or a 400 with `truncate: false`) → images (media
 * markers) — with the grammar (format, forced tool calls; one grammar budget per request, grammar-budget.ts, converted
 * off the JS thread), stops and the output parser that go with the render. The request's AbortSignal (the client went
 * away) stops it between renders, tokenizations and conversions (RequestCancelledError). Called by CompletionService
 * with the runner of its lease, and by ChatService.countPromptTokens. Captures nothing of a request between calls.
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
   * @param signal aborted when the client went away: the stage stops before its next step (RequestCancelledError).
   */
  prepare(
    source: PromptSource,
    model: ResolvedModel,
    runner: Runner,
    options: EffectiveOptions,
    signal?: AbortSignal,
  ): Promise<PreparedPrompt> {
    return source.kind === 'chat'
      ? this.prepareChat(source.cmd, model, runner, options, signal)
      : this.prepareGenerate(source.cmd, model, runner, options, signal);
  }

  /**
   * A chat prompt (§3.3, §4.4): the assembled messages (assembleChatMessages) rendered and tokenized
   * ({@link ChatRenderer}); when the prompt does not fit the slot, the oldest messages are dropped (never system
   * messages, never the last message) like Ollama's chatPrompt, the number to drop found by binary search over
   * text-only renders (fewestDrops: O(log n) renders, the same messages as one at a time whenever the token count does
   * not grow as messages are dropped), then the kept ones rendered in full; if it still does not fit, tokens are cut
   * keeping the first num_keep (fitPrompt). With images no message is dropped and nothing cut (the engine answers a
   * prompt that does not fit with a 400). `growContext` implies `truncate: false`. The grammar budget is checked and
   * the grammars converted once, before the first render.
   * @throws InvalidRequestError `template error: …`, `invalid JSON schema in format: …`, a grammar budget limit;
   *   ContextLengthExceededError (Ollama's prompt-too-long 400, with the prompt and context sizes) when it does not
   *   fit and may not be cut; RequestCancelledError when `signal` fired.
   */
  async prepareChat(
    cmd: ChatCommand,
    model: ResolvedModel,
    runner: Runner,
    options: EffectiveOptions,
    signal?: AbortSignal,
  ): Promise<PreparedPrompt> {
    const messages = assembleChatMessages(cmd, model);
    const renderer = await this.chatRenderer(cmd, model, runner, signal);
    // Media: the engine evaluates the text and images/audio itself; no message dropping or truncation (too long → 400
    // there).
    if (messages.some((m) => m.images?.length || m.audio?.length)) return renderer.render(messages);
    let prepared = await renderer.render(messages);
    const truncate = cmd.growContext ? false : cmd.truncate;
    const limit = runner.slotContext;
    if (truncate !== false && prepared.tokens.length >= limit) {
      const probes = new Map<number, ChatProbe>();
      const drop = await fewestDrops(
        droppableCount(messages),
        async (k) => {
          if (k === 0) return false; // the full render above did not fit
          const probe = await renderer.probe(dropOldest(messages, k));
          probes.set(k, probe);
          return probe.tokens.length < limit;
        },
        signal,
      );
      if (drop > 0) prepared = await renderer.render(dropOldest(messages, drop), probes.get(drop));
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
  async countChat(
    cmd: ChatCommand,
    model: ResolvedModel,
    runner: Runner,
    signal?: AbortSignal,
  ): Promise<PreparedPrompt> {
    return (await this.chatRenderer(cmd, model, runner, signal)).render(assembleChatMessages(cmd, model));
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
    signal?: AbortSignal,
  ): Promise<PreparedPrompt> {
    if (cmd.promptTokens?.length) cmd = { ...cmd, prompt: await runner.detokenize(cmd.promptTokens) };
    throwIfCancelled(signal);
    const { text, prompt: extra } = await this.renderGenerate(cmd, model, runner, signal);
    throwIfCancelled(signal);
    const media = toMediaPrompt(text, [...(cmd.images ?? []), ...(cmd.audio ?? [])]);
    if (media) {
      // Images are evaluated by the engine from the text (no truncation: a prompt that does not fit is a 400 there).
      return { ...extra, tokens: await tokenizePrompt(runner, media.prompt), media };
    }
    const tokens = await tokenizePrompt(runner, text);
    throwIfCancelled(signal);
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
   * THE renderer of a chat request, shared by prepareChat and countChat so both see the same tokens: rendered mode with
   * the model's Go TEMPLATE when it has one (and the engine is available), else native mode (GGUF Jinja through
   * llama.cpp common/chat), with the grammar budget checked and the grammars converted once (ChatRenderer.create).
   */
  private chatRenderer(
    cmd: ChatCommand,
    model: ResolvedModel,
    runner: Runner,
    signal: AbortSignal | undefined,
  ): Promise<ChatRenderer> {
    const go = goTemplateFor(model.template, this.templates.engine());
    if (model.template && !go) this.noteTemplateFallback(model);
    return ChatRenderer.create(cmd, model, runner, go, signal);
  }

  /**
   * The text of a generate prompt before tokenizing, with the render's grammar, stops and parser (see prepareGenerate).
   * The `format` grammar is converted once, within the request's grammar budget, after the checks that need none.
   */
  private async renderGenerate(
    cmd: GenerateCommand,
    model: ResolvedModel,
    runner: Runner,
    signal: AbortSignal | undefined,
  ): Promise<RenderedPrompt> {
    const budget = GrammarBudget.of(cmd.format, undefined);
    const templateText = cmd.raw ? undefined : cmd.template || model.template;
    const go = goTemplateFor(templateText, this.templates.engine());
    if (templateText && !go) this.noteTemplateFallback(model);
    if (!cmd.raw && cmd.suffix && !go) {
      throw new UnsupportedCapabilityError(`${model.name.toFullString()} does not support insert`, 'insert');
    }
    const format = cmd.format ? await formatGrammar(cmd.format, budget, runner, signal) : undefined;
    const formatOnly = format ? { grammar: format } : {};
    if (cmd.raw) return { text: cmd.prompt, prompt: formatOnly };
    const opts = { think: cmd.think, thinking: thinkingEnabled(cmd.think, model), format: cmd.format };
    let r: RenderedPrompt;
    if (cmd.suffix && go) {
      const fim = { ...opts, fim: { prompt: cmd.prompt, suffix: cmd.suffix } };
      r = renderGo(
        go.api,
        go.template,
        [],
        fim,
        { format },
        await renderGoTextAsync(go.api, go.template, [], fim, signal),
      );
    } else {
      const messages = foldAudio(generateMessages(cmd, model));
      if (go) {
        const text = await renderGoTextAsync(go.api, go.template, messages, opts, signal);
        r = renderGo(go.api, go.template, messages, opts, { format }, text);
      } else if (runner.info.hasChatTemplate) {
        r = await renderNative(runner, withImageMarkers(messages), opts, { format }, budget);
      } else r = { text: cmd.prompt, prompt: formatOnly };
    }
    if (cmd.context && cmd.context.length > 0) return { ...r, text: (await runner.detokenize(cmd.context)) + r.text };
    return r;
  }
}
