import { Injectable, Logger } from '@nestjs/common';
import { defer, Observable, of, switchMap } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError, UnsupportedCapabilityError } from '../common/errors';
import { ModelsService, ResolvedModel } from '../models';
import { CompletionService, PreparedPrompt } from './completion.service';
import { GenerateCommand, GenerationEvent } from './generation.types';
import { EffectiveOptions } from './options';
import { tokenizePrompt, truncatePrompt } from './prompt.builder';
import { Runner, RunnerChatMessage } from './runner/runner';
import { SchedulerService } from './scheduler.service';

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
  ) {}

  /** Whether the request is a load/unload shortcut, answered with one JSON object even when streaming (§3.2). */
  static isShortcut(cmd: GenerateCommand): boolean {
    return cmd.prompt === '';
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
    if (cmd.prompt === '' && cmd.keepAliveMs === 0) {
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
    if (cmd.images && cmd.images.length > 0) {
      this.logger.debug(`ignoring ${cmd.images.length} image(s): ${model.shortName} has no vision support here`);
    }
    if (cmd.prompt === '') {
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
      buildPrompt: (runner, options) => this.buildPrompt(cmd, model, runner, options),
    });
  }

  /**
   * The prompt of a generate request: raw → verbatim; otherwise `[system?, …Modelfile MESSAGEs, user: prompt]`
   * rendered with the GGUF chat template (Ollama's GenerateHandler message list), with the deprecated `context`
   * detokenized in front. A model without any chat template gets the prompt verbatim (Ollama's `{{ .Prompt }}`).
   */
  private buildPrompt(
    cmd: GenerateCommand,
    model: ResolvedModel,
    runner: Runner,
    options: EffectiveOptions,
  ): PreparedPrompt {
    let text: string;
    if (cmd.raw) {
      text = cmd.prompt;
    } else {
      const goTemplate = cmd.template || model.template;
      if (goTemplate) this.completion.noteTemplateFallback(model);
      const messages: RunnerChatMessage[] = [];
      const system = cmd.system ?? model.system;
      if (system) messages.push({ role: 'system', content: system });
      if (!cmd.context) messages.push(...model.messages);
      messages.push({ role: 'user', content: cmd.prompt });
      text = runner.info.hasChatTemplate
        ? runner.applyChatTemplate(messages, { addGenerationPrompt: true })
        : cmd.prompt;
      if (cmd.context && cmd.context.length > 0) text = runner.detokenize(cmd.context) + text;
    }
    const tokens = tokenizePrompt(runner, text);
    const fitted = truncatePrompt(tokens, runner.slotContext, options.sampling.numKeep, runner.info.addBos);
    if (fitted.dropped > 0) {
      this.logger.warn(
        `truncating input prompt: ${tokens.length} tokens, limit ${runner.slotContext}, kept ${fitted.tokens.length}`,
      );
    }
    return { tokens: fitted.tokens };
  }
}
