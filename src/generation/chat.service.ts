import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { defer, Observable, of, switchMap } from 'rxjs';
import { InvalidRequestError, UnsupportedCapabilityError } from '../common/errors';
import { ModelsService, ResolvedModel } from '../models';
import { CompletionService, PreparedPrompt } from './completion.service';
import { thinkingUnsupported, wantsThinking } from './generate.service';
import { ChatCommand, ChatMessage, GenerationEvent } from './generation.types';
import { EffectiveOptions } from './options';
import { fitPrompt, tokenizePrompt } from './prompt.builder';
import {
  checkImages,
  goTemplateFor,
  renderGo,
  renderNative,
  stripEarlierThinking,
  thinkingEnabled,
} from './prompt-render';
import { Runner } from '../runner';
import { SchedulerService } from '../scheduler';
import { GoTemplateRenderer, TEMPLATE_RENDERER, TemplateRenderer } from './template-renderer';
import { toMediaPrompt, withImageMarkers } from './media-prompt';

/** Observes one chat() call (the compat layers use it to report usage before the first token). */
export interface ChatObserver {
  /**
   * Called once the prompt is built, before generation starts and before the first event: its size in tokens — the
   * whole prompt as submitted (after any fitting), i.e. the `promptEvalCount` the done event will report (reused +
   * evaluated). With images, the text tokens only (the engine adds the image embeddings).
   */
  onPrompt?(promptTokens: number): void;
}

/** The render options of a chat request (tools, tool choice, thinking, format), shared by prompts and token counts. */
function renderOptions(cmd: ChatCommand, model: ResolvedModel) {
  return {
    tools: cmd.tools,
    toolChoice: cmd.toolChoice,
    think: cmd.think,
    thinking: thinkingEnabled(cmd.think, model),
    format: cmd.format,
  };
}

/**
 * /api/chat in domain terms (reference/ollama-api.md §3.3): validation in Ollama's order, load/unload shortcuts,
 * message assembly (Modelfile MESSAGE history and SYSTEM), rendering with the GGUF chat template, truncation,
 * streaming. Knows nothing about HTTP.
 */
@Injectable()
export class ChatService {
  private readonly logger = new Logger(ChatService.name);

  constructor(
    private readonly models: ModelsService,
    private readonly completion: CompletionService,
    private readonly scheduler: SchedulerService,
    @Optional()
    @Inject(TEMPLATE_RENDERER)
    private readonly templates: TemplateRenderer = new GoTemplateRenderer(),
  ) {}

  /** Whether the request is a load/unload shortcut, answered with one JSON object even when streaming (§3.3). */
  static isShortcut(cmd: ChatCommand): boolean {
    return cmd.messages.length === 0;
  }

  /**
   * The events of one chat request. Cold; errors before the first event: InvalidRequestError (`model is required`,
   * `invalid model name`), ModelNotFoundError (`model '<name>' not found`), UnsupportedCapabilityError
   * (`"<model>" does not support chat|thinking`, `<full name> does not support tools`).
   * @param observer told the prompt size once the prompt is built, before the first event (see ChatObserver).
   */
  chat(cmd: ChatCommand, observer?: ChatObserver): Observable<GenerationEvent> {
    return defer(async () => {
      if (!cmd.model) throw new InvalidRequestError('model is required', 'model');
      return this.models.resolve(cmd.model);
    }).pipe(switchMap((model) => this.run(cmd, model, observer)));
  }

  /**
   * Prompt tokens the request would use (for count-tokens endpoints, e.g. Anthropic's /v1/messages/count_tokens):
   * the same checks and the same render + tokenize step as chat() ({@link preparePrompt}) — it loads the model through
   * the scheduler for its template and tokenizer — without dropping messages, truncating or generating. With
   * `growContext` (the compat layers) a loaded runner with a larger context is reused, as chat() would. Emits one
   * number (tokens, the whole prompt), then completes; for a request that chat() does not cut (growContext, or a
   * prompt that fits) it equals chat()'s `promptEvalCount` (for images: their media markers are counted as text, the
   * engine counts the image embeddings). Errors as chat(); an empty `messages` is counted as an empty conversation.
   */
  countPromptTokens(cmd: ChatCommand): Observable<number> {
    return defer(async () => {
      if (!cmd.model) throw new InvalidRequestError('model is required', 'model');
      return this.models.resolve(cmd.model);
    }).pipe(
      switchMap((model) => {
        this.check(cmd, model);
        const { spec } = this.completion.plan(model, cmd.options);
        const acquire = {
          spec,
          keepAliveMs: cmd.keepAliveMs,
          acceptLargerContext: cmd.growContext,
          modelName: model.shortName,
        };
        return this.scheduler.withRunner(acquire, (lease) =>
          defer(
            async () =>
              (await this.preparePrompt(cmd, model, lease.runner, ChatService.assembleMessages(cmd, model))).tokens
                .length,
          ),
        );
      }),
    );
  }

  /** Capability checks of chat(), in Ollama's order. */
  private check(cmd: ChatCommand, model: ResolvedModel): void {
    if (!model.capabilities.includes('completion')) {
      throw new UnsupportedCapabilityError(`${JSON.stringify(cmd.model)} does not support chat`, 'completion');
    }
    if (cmd.tools && cmd.tools.length > 0 && !model.capabilities.includes('tools')) {
      throw new UnsupportedCapabilityError(`${model.name.toFullString()} does not support tools`, 'tools');
    }
    if (wantsThinking(cmd.think) && !model.capabilities.includes('thinking')) throw thinkingUnsupported(cmd.model);
    checkImages(
      model,
      cmd.messages.reduce((n, m) => n + (m.images?.length ?? 0), 0),
    );
  }

  /**
   * THE render + tokenize step of a chat prompt, shared by generation (buildPrompt) and counting
   * (countPromptTokens) so both see the same tokens: rendered mode with the model's Go TEMPLATE when it has one (and
   * the engine is available), else native mode (GGUF Jinja through llama.cpp common/chat), with the request's tools,
   * tool choice, thinking and format (§8.1); tokenized like llama.cpp's server (tokenizePrompt: special tokens added
   * and parsed). Messages with images get `[img-N]` markers turned into media markers (`media`; `tokens` then only
   * count the text). No fitting: the caller drops messages or truncates.
   */
  private async preparePrompt(
    cmd: ChatCommand,
    model: ResolvedModel,
    runner: Runner,
    messages: ChatMessage[],
  ): Promise<PreparedPrompt> {
    const opts = renderOptions(cmd, model);
    const go = goTemplateFor(model.template, this.templates.engine());
    const images = messages.flatMap((m) => m.images ?? []);
    const r = go
      ? renderGo(go.api, go.template, runner, messages, opts)
      : await renderNative(runner, images.length > 0 ? withImageMarkers(messages) : messages, opts);
    const media = toMediaPrompt(r.text, images);
    if (media) return { ...r.prompt, tokens: await tokenizePrompt(runner, media.prompt), media };
    return { ...r.prompt, tokens: await tokenizePrompt(runner, r.text) };
  }

  private run(cmd: ChatCommand, model: ResolvedModel, observer?: ChatObserver): Observable<GenerationEvent> {
    if (cmd.messages.length === 0 && cmd.keepAliveMs === 0) {
      this.scheduler.expire(model.modelPath);
      return of<GenerationEvent>({ kind: 'done', reason: 'unload' });
    }
    this.check(cmd, model);
    const base = {
      model,
      options: cmd.options,
      keepAliveMs: cmd.keepAliveMs,
      startedAt: cmd.startedAt,
      kind: 'chat' as const,
      topLogprobs: cmd.topLogprobs,
      shift: cmd.shift,
      growContext: cmd.growContext,
    };
    if (cmd.messages.length === 0) return this.completion.complete({ ...base, loadOnly: true });
    return this.completion.complete({
      ...base,
      buildPrompt: async (runner, options) => {
        const prepared = await this.buildPrompt(cmd, model, runner, options);
        observer?.onPrompt?.(prepared.tokens.length);
        return prepared;
      },
    });
  }

  /**
   * Messages for the template: the Modelfile MESSAGE history first, then the request's; the Modelfile SYSTEM in
   * front when the conversation does not start with a system message (§3.3 step 6); for thinking-capable models,
   * `<think>…</think>` is stripped from assistant messages before the last user message.
   */
  static assembleMessages(cmd: ChatCommand, model: ResolvedModel): ChatMessage[] {
    let messages: ChatMessage[] = [
      ...model.messages.map((m) => ({ role: m.role, content: m.content })),
      ...cmd.messages,
    ];
    if (model.system && messages[0]?.role !== 'system') messages.unshift({ role: 'system', content: model.system });
    if (model.capabilities.includes('thinking')) messages = stripEarlierThinking(messages);
    return messages;
  }

  /**
   * Renders — rendered mode with the model's Go TEMPLATE when it has one (and the engine is available), else native
   * mode (GGUF Jinja through llama.cpp common/chat), both with tools, thinking and format (§8.1) — and tokenizes;
   * when the prompt does not fit the slot, drops the oldest messages one at a time (never system messages, never
   * the last message) and re-renders, like Ollama's chatPrompt (§4.4); if it still does not fit, cuts tokens keeping
   * the first num_keep — or, with `truncate: false`, fails with Ollama's prompt-too-long 400.
   */
  private async buildPrompt(
    cmd: ChatCommand,
    model: ResolvedModel,
    runner: Runner,
    options: EffectiveOptions,
  ): Promise<PreparedPrompt> {
    const messages = ChatService.assembleMessages(cmd, model);
    if (model.template && !goTemplateFor(model.template, this.templates.engine())) {
      this.completion.noteTemplateFallback(model);
    }
    // Images: the engine evaluates the text and images itself; no message dropping or truncation (too long → 400 there).
    if (messages.some((m) => m.images?.length)) return this.preparePrompt(cmd, model, runner, messages);
    const render = (list: ChatMessage[]) => this.preparePrompt(cmd, model, runner, list);
    let prepared = await render(messages);
    const truncate = cmd.growContext ? false : cmd.truncate;
    while (truncate !== false && prepared.tokens.length >= runner.slotContext) {
      const drop = messages.findIndex((m, i) => m.role !== 'system' && i < messages.length - 1);
      if (drop < 0) break;
      messages.splice(drop, 1);
      prepared = await render(messages);
    }
    const fitted = fitPrompt(prepared.tokens, runner, options, truncate);
    if (fitted.dropped > 0) {
      this.logger.warn(`truncating input prompt: ${prepared.tokens.length} tokens, limit ${runner.slotContext}`);
    }
    return { ...prepared, tokens: fitted.tokens };
  }
}
