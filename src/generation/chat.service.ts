import { Injectable } from '@nestjs/common';
import { defer, Observable, of, switchMap } from 'rxjs';
import { InvalidRequestError, UnsupportedCapabilityError } from '../common/errors';
import { ModelsService, ResolvedModel } from '../models';
import { CompletionService } from './completion.service';
import { thinkingUnsupported, wantsThinking } from './generate.service';
import { ChatCommand, ChatObserver, GenerationEvent } from './generation.types';
import { checkAudio, checkImages, GrammarBudget, messagesAudio, PromptService } from './prompt';
import { SchedulerService } from '../scheduler';
import { RunnerLora } from '../runner';
import { resolveLoras } from './lora-selection';

/**
 * /api/chat in domain terms (reference/ollama-api.md §3.3): validation in Ollama's order, load/unload shortcuts,
 * then the completion of the chat prompt (message assembly, rendering, fitting: the prompt stage, PromptService) and
 * streaming. Knows nothing about HTTP.
 */
@Injectable()
export class ChatService {
  constructor(
    private readonly models: ModelsService,
    private readonly completion: CompletionService,
    private readonly scheduler: SchedulerService,
    private readonly prompts: PromptService,
  ) {}

  /** Whether the request is a load/unload shortcut, answered with one JSON object even when streaming (§3.3). */
  static isShortcut(cmd: ChatCommand): boolean {
    return cmd.messages.length === 0;
  }

  /**
   * The events of one chat request. Cold; errors before the first event: InvalidRequestError (`model is required`,
   * `invalid model name`), ModelNotFoundError (`model '<name>' not found`), UnsupportedCapabilityError
   * (`"<model>" does not support chat|thinking`, `<full name> does not support tools`); the `lora` errors of
   * resolveLoras (400, or the model-not-found of a `lora` name).
   * @param observer told the prompt size once the prompt is built, before the first event (see ChatObserver).
   */
  chat(cmd: ChatCommand, observer?: ChatObserver): Observable<GenerationEvent> {
    return defer(async () => {
      if (!cmd.model) throw new InvalidRequestError('model is required', 'model');
      const model = await this.models.resolve(cmd.model);
      const loras = cmd.lora ? await resolveLoras(model, cmd.lora, (name) => this.models.resolve(name)) : undefined;
      return { model, loras };
    }).pipe(switchMap(({ model, loras }) => this.run(cmd, model, loras, observer)));
  }

  /**
   * Prompt tokens the request would use (for count-tokens endpoints, e.g. Anthropic's /v1/messages/count_tokens):
   * the same checks and the same render + tokenize step as chat() (PromptService.countChat) — it loads the model through
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
          defer(async () => (await this.prompts.countChat(cmd, model, lease.runner)).tokens.length),
        );
      }),
    );
  }

  /**
   * Capability checks of chat(), in Ollama's order, then the request's grammar budget (GrammarBudget.of: a 400 when
   * `format` and the tools' schemas are too large together).
   */
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
      cmd.messages.flatMap((m) => m.images ?? []),
    );
    checkAudio(model, messagesAudio(cmd.messages));
    // The request's grammar budget (format + every tool's schema), before the model is even loaded.
    GrammarBudget.of(cmd.format, cmd.tools);
  }

  private run(
    cmd: ChatCommand,
    model: ResolvedModel,
    loras: RunnerLora[] | undefined,
    observer?: ChatObserver,
  ): Observable<GenerationEvent> {
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
      topLogprobs: cmd.topLogprobs,
      shift: cmd.shift,
      growContext: cmd.growContext,
      ...(loras ? { loras } : {}),
    };
    if (cmd.messages.length === 0) return this.completion.complete({ ...base, loadOnly: true });
    return this.completion.complete({ ...base, prompt: { kind: 'chat', cmd }, observer });
  }
}
