import { Injectable } from '@nestjs/common';
import { defer, Observable, of, switchMap } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError, UnsupportedCapabilityError } from '../common/errors';
import { ModelsService, ResolvedModel } from '../models';
import { CompletionService } from './completion.service';
import { GenerateCommand, GenerationEvent } from './generation.types';
import { checkAudio, checkImages, GrammarBudget } from './prompt';
import { SchedulerService } from '../scheduler';
import { RunnerLora } from '../runner';
import { resolveLoras } from './lora-selection';

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
 * unload shortcuts, and streams the completion of the prompt (rendered and fitted by the prompt stage,
 * PromptService.prepareGenerate). Knows nothing about HTTP.
 */
@Injectable()
export class GenerateService {
  constructor(
    private readonly models: ModelsService,
    private readonly completion: CompletionService,
    private readonly scheduler: SchedulerService,
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
   * (`"<model>" does not support generate|thinking`, `<full name> does not support insert`); the `lora` errors of
   * resolveLoras (400, or the model-not-found of a `lora` name).
   */
  generate(cmd: GenerateCommand): Observable<GenerationEvent> {
    return defer(async () => {
      if (!cmd.model) throw new ModelNotFoundError('');
      const model = await this.models.resolve(cmd.model);
      const loras = cmd.lora ? await resolveLoras(model, cmd.lora, (name) => this.models.resolve(name)) : undefined;
      return { model, loras };
    }).pipe(switchMap(({ model, loras }) => this.run(cmd, model, loras)));
  }

  private run(cmd: GenerateCommand, model: ResolvedModel, loras?: RunnerLora[]): Observable<GenerationEvent> {
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
    checkImages(model, cmd.images ?? []);
    checkAudio(model, cmd.audio ?? []);
    GrammarBudget.of(cmd.format, undefined); // the request's grammar budget, before the model is loaded
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
      ...(loras ? { loras } : {}),
      prompt: { kind: 'generate', cmd },
    });
  }
}
