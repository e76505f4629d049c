import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { defer, Observable, of, switchMap } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError, UnsupportedCapabilityError } from '../common/errors';
import { ModelsService, ResolvedModel } from '../models';
import { CompletionService, PreparedPrompt } from './completion.service';
import { formatGrammar } from './format';
import { ChatMessage, GenerateCommand, GenerationEvent } from './generation.types';
import { EffectiveOptions } from './options';
import { fitPrompt, tokenizePrompt } from './prompt.builder';
import { checkImages, goTemplateFor, renderGo, renderNative, thinkingEnabled } from './prompt-render';
import { Runner } from '../runner';
import { SchedulerService } from '../scheduler';
import { GoTemplateRenderer, TEMPLATE_RENDERER, TemplateRenderer } from './template-renderer';
import { toMediaPrompt, withImageMarkers } from './media-prompt';

/** Ollama's text when `think` is asked of a model without the capability (§5.2): the name as sent, Go-quoted. */
export function thinkingUnsupported(model: string): UnsupportedCapabilityError {
  return new UnsupportedCapabilityError(`${JSON.stringify(model)} does not support thinking`, 'thinking');
}

/** Whether a `think` value asks for thinking (true or a level string). */
export function wantsThinking(think: boolean | string | undefined): boolean {
  return think === true || (typeof think === 'string' && think !== '');
}

/**
 * /api/generate in domain terms (reference/ollama-api.md §3.2): validates in Ollama's order, handles the load and
 * unload shortcuts, renders the prompt and streams the completion. Knows nothing about HTTP.
 */
@Injectable()
export class GenerateService {
  private readonly logger = new Logger(GenerateService.name);

  constructor(
    private readonly models: ModelsService,
    private readonly completion: CompletionService,
    private readonly scheduler: SchedulerService,
    @Optional()
    @Inject(TEMPLATE_RENDERER)
    private readonly templates: TemplateRenderer = new GoTemplateRenderer(),
  ) {}

  /** Whether the request is a load/unload shortcut, answered with one JSON object even when streaming (§3.2). */
  static isShortcut(cmd: GenerateCommand): boolean {
    return cmd.prompt === '' && !cmd.promptTokens?.length;
  }

  /**
   * The events of one generate request. Cold; errors before the first event are domain errors for the filter:
   * ModelNotFoundError (`model '' not found` for an empty name — generate is the odd one out — and
   * `model '<name>' not found`), InvalidRequestError (`invalid model name`,
   * `raw mode does not support template, system, or context`), UnsupportedCapabilityError
   * (`"<model>" does not support generate|thinking`, `<full name> does not support insert`).
   */
  generate(cmd: GenerateCommand): Observable<GenerationEvent> {
    return defer(async () => {
      if (!cmd.model) throw new ModelNotFoundError('');
      return this.models.resolve(cmd.model);
    }).pipe(switchMap((model) => this.run(cmd, model)));
  }

  private run(cmd: GenerateCommand, model: ResolvedModel): Observable<GenerationEvent> {
    if (GenerateService.isShortcut(cmd) && cmd.keepAliveMs === 0) {
      this.scheduler.expire(model.modelPath);
      return of<GenerationEvent>({ kind: 'done', reason: 'unload' });
    }
    if (cmd.raw && (cmd.template || cmd.system || (cmd.context && cmd.context.length > 0))) {
      throw new InvalidRequestError('raw mode does not support template, system, or context');
    }
    if (!model.capabilities.includes('completion')) {
      throw new UnsupportedCapabilityError(`${JSON.stringify(cmd.model)} does not support generate`, 'completion');
    }
    if (cmd.suffix && !model.capabilities.includes('insert')) {
      throw new UnsupportedCapabilityError(`${model.name.toFullString()} does not support insert`, 'insert');
    }
    if (wantsThinking(cmd.think) && !model.capabilities.includes('thinking')) throw thinkingUnsupported(cmd.model);
    checkImages(model, cmd.images?.length ?? 0);
    if (GenerateService.isShortcut(cmd)) {
      return this.completion.complete({
        model,
        options: cmd.options,
        keepAliveMs: cmd.keepAliveMs,
        startedAt: cmd.startedAt,
        loadOnly: true,
      });
    }
    return this.completion.complete({
      model,
      options: cmd.options,
      keepAliveMs: cmd.keepAliveMs,
      startedAt: cmd.startedAt,
      returnContext: !cmd.raw,
      topLogprobs: cmd.topLogprobs,
      shift: cmd.shift,
      growContext: cmd.growContext,
      buildPrompt: async (runner, options) =>
        this.buildPrompt(
          cmd.promptTokens?.length ? { ...cmd, prompt: await runner.detokenize(cmd.promptTokens) } : cmd,
          model,
          runner,
          options,
        ),
    });
  }

  /**
   * The prompt of a generate request (§3.2, §8): raw → verbatim; `suffix` → fill-in-the-middle through the Go
   * template's `.Prompt`/`.Suffix`; otherwise messages `[system?, …Modelfile MESSAGEs (unless context), user: prompt
   * (+images)]` rendered with the Go template (rendered mode: request `template` or Modelfile TEMPLATE) or the GGUF
   * Jinja template (native mode), with the deprecated `context` detokenized in front. A model without any template
   * gets the prompt verbatim (Ollama's `{{ .Prompt }}`). `format` becomes a grammar in every mode; thinking is split
   * out where a template supports it. Too long: keep num_keep and drop from the middle, or 400 with truncate:false.
   * @throws UnsupportedCapabilityError `<full name> does not support insert` when a suffix cannot be rendered.
   */
  private async buildPrompt(
    cmd: GenerateCommand,
    model: ResolvedModel,
    runner: Runner,
    options: EffectiveOptions,
  ): Promise<PreparedPrompt> {
    let text: string;
    let extra: Omit<PreparedPrompt, 'tokens'> = {};
    const formatOnly = () =>
      cmd.format ? { grammar: formatGrammar(cmd.format, (s) => runner.jsonSchemaToGrammar(s)) } : {};
    if (cmd.raw) {
      text = cmd.prompt;
      extra = formatOnly();
    } else {
      const templateText = cmd.template || model.template;
      const go = goTemplateFor(templateText, this.templates.engine());
      if (templateText && !go) this.completion.noteTemplateFallback(model);
      const thinking = thinkingEnabled(cmd.think, model);
      const opts = { think: cmd.think, thinking, format: cmd.format };
      if (cmd.suffix) {
        if (!go) {
          throw new UnsupportedCapabilityError(`${model.name.toFullString()} does not support insert`, 'insert');
        }
        const r = renderGo(go.api, go.template, runner, [], {
          ...opts,
          fim: { prompt: cmd.prompt, suffix: cmd.suffix },
        });
        text = r.text;
        extra = r.prompt;
      } else {
        const messages: ChatMessage[] = [];
        const system = cmd.system ?? model.system;
        if (system) messages.push({ role: 'system', content: system });
        if (!cmd.context) messages.push(...model.messages.map((m) => ({ role: m.role, content: m.content })));
        messages.push({
          role: 'user',
          content: cmd.prompt,
          ...(cmd.images && cmd.images.length > 0 ? { images: cmd.images } : {}),
        });
        if (go) {
          const r = renderGo(go.api, go.template, runner, messages, opts);
          text = r.text;
          extra = r.prompt;
        } else if (runner.info.hasChatTemplate) {
          const r = await renderNative(runner, withImageMarkers(messages), opts);
          text = r.text;
          extra = r.prompt;
        } else {
          text = cmd.prompt;
          extra = formatOnly();
        }
      }
      if (cmd.context && cmd.context.length > 0) text = (await runner.detokenize(cmd.context)) + text;
    }
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
}
