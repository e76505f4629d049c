import { Body, Controller, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ModelNotFoundError } from '../../common/errors';
import { clientGoneSignal, StreamResponder } from '../../common/http';
import { LlamadRoutes, Metered } from '../../security';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import { ChatService, ContextLengthService, EmbedService, GenerateService } from '../../generation';
import { ModelsService, ResolvedModel } from '../../models';
import { OpenAIExceptionFilter, openAIErrorFrame } from './openai-error';
import {
  fromOpenAIChatRequest,
  fromOpenAICompletionRequest,
  fromOpenAIEmbeddingRequest,
  wantsStream,
  wantsUsage,
} from './openai-request.mapper';
import {
  fromResolvedModel,
  newCompletionId,
  toChatCompletion,
  toChatCompletionChunks,
  toCompletion,
  toContextFields,
  toCompletionChunks,
  toEmbeddingResponse,
  toOpenAIModelList,
  unixNow,
} from './openai-response.mapper';
import { OpenAIEmbeddingResponse, OpenAIModel, OpenAIModelList } from './openai.types';
import { writeSse } from './sse-writer';

/**
 * The OpenAI-compatible routes under /v1 (reference/ollama-api.md §12.2–§12.5). Thin: decode with the request
 * mapper, call the domain services, encode with the response mapper; every error is rendered by
 * OpenAIExceptionFilter as `{"error":{message,type,param,code}}`. Any `Authorization: Bearer` key is accepted and
 * none is checked (the service spec: any dummy key).
 */
@Controller('v1')
@LlamadRoutes(OpenAIExceptionFilter)
export class OpenAIController {
  constructor(
    private readonly chatService: ChatService,
    private readonly generateService: GenerateService,
    private readonly embedService: EmbedService,
    private readonly models: ModelsService,
    private readonly responder: StreamResponder,
    private readonly contexts: ContextLengthService,
  ) {}

  /**
   * POST /v1/chat/completions: `chat.completion` (default) or, with `stream: true`, SSE `chat.completion.chunk`
   * frames ending in `data: [DONE]`. 400 for invalid requests or capabilities, 404 for an unknown model.
   */
  @Post('chat/completions')
  @HttpCode(200)
  @Metered('openai')
  @ApiRoute({
    id: 'createChatCompletion',
    rateLimited: true,
    summary: 'Create a chat completion',
    tag: ApiTag.OpenAI,
    body: 'OpenAIChatRequest',
    ok: {
      description: '`chat.completion`, or with `stream: true` `chat.completion.chunk` events ending in `[DONE]`.',
      json: 'OpenAIChatCompletion',
      sse: 'OpenAIChatCompletionEvent',
    },
  })
  async chatCompletions(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    const cmd = fromOpenAIChatRequest(body, process.hrtime.bigint());
    const meta = { id: newCompletionId('chatcmpl'), created: unixNow(), model: cmd.model };
    const events$ = this.chatService.chat(cmd);
    const withLogprobs = cmd.topLogprobs !== undefined;
    if (!wantsStream(body as object)) {
      await this.responder.json(reply, events$.pipe(toChatCompletion(meta, withLogprobs)));
      return;
    }
    const includeUsage = wantsUsage(body as object);
    await writeSse(reply, events$.pipe(toChatCompletionChunks(meta, { includeUsage, withLogprobs })), openAIErrorFrame);
  }

  /**
   * POST /v1/completions: `text_completion` (default) or SSE chunks of the same shape ending in `data: [DONE]`. A
   * `prompt` array gives one choice per prompt (its `index`; streamed chunks carry it), usage summed; token-id prompts
   * are detokenized by the model. 400 for a malformed prompt (decodeCompletionPrompt).
   */
  @Post('completions')
  @HttpCode(200)
  @Metered('openai')
  @ApiRoute({
    id: 'createCompletion',
    rateLimited: true,
    summary: 'Create a text completion',
    tag: ApiTag.OpenAI,
    body: 'OpenAICompletionRequest',
    ok: {
      description: '`text_completion`, or with `stream: true` chunks of the same shape ending in `[DONE]`.',
      json: 'OpenAICompletion',
      sse: 'OpenAICompletionEvent',
    },
  })
  async completions(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    const cmds = fromOpenAICompletionRequest(body, process.hrtime.bigint());
    const meta = { id: newCompletionId('cmpl'), created: unixNow(), model: cmds[0].model };
    const sources = cmds.map((cmd) => this.generateService.generate(cmd));
    if (!wantsStream(body as object)) {
      await this.responder.json(reply, toCompletion(meta, sources));
      return;
    }
    await writeSse(reply, toCompletionChunks(meta, sources, wantsUsage(body as object)), openAIErrorFrame);
  }

  /**
   * POST /v1/embeddings: one L2-normalized vector per input, as numbers or base64 little-endian float32. A client
   * that leaves cancels the embedding.
   */
  @Post('embeddings')
  @HttpCode(200)
  @Metered('openai')
  @ApiRoute({
    id: 'createEmbedding',
    rateLimited: true,
    summary: 'Create embeddings',
    tag: ApiTag.OpenAI,
    body: 'OpenAIEmbeddingRequest',
    ok: { description: 'One L2-normalized vector per input.', json: 'OpenAIEmbeddingResponse' },
  })
  async embeddings(
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<OpenAIEmbeddingResponse> {
    const { command, encoding } = fromOpenAIEmbeddingRequest(body, process.hrtime.bigint());
    const result = await this.embedService.embed({ ...command, signal: clientGoneSignal(reply) });
    return toEmbeddingResponse(command.model, result, encoding);
  }

  /**
   * GET /v1/models: every local model, newest first; `data` is `[]` when there are none. Models with LoRA adapters
   * carry vLLM's `parent` (their base model) and `root` (toOpenAIModelList; beyond Ollama). Every row carries
   * `context_length` and `max_context_length` (tokens; beyond Ollama, toContextFields).
   */
  @Get('models')
  @ApiRoute({
    id: 'listOpenAIModels',
    summary: 'List models',
    tag: ApiTag.OpenAI,
    ok: { description: 'Every local model, newest first.', json: 'OpenAIModelList' },
  })
  async listModels(): Promise<OpenAIModelList> {
    const rows = toOpenAIModelList(await this.models.list());
    const contexts = await Promise.all(
      rows.map((row) =>
        this.models.resolve(row.id).then(
          (model) => this.contextFields(model),
          // A model whose files went away meanwhile (or are broken) is listed without the context fields.
          () => ({}),
        ),
      ),
    );
    return { object: 'list', data: rows.map((row, i) => ({ ...row, ...contexts[i] })) };
  }

  /**
   * GET /v1/models/:model: the model with `id` as requested, with `context_length` / `max_context_length` as in the
   * list; 404 `model '<id>' not found` when unknown.
   */
  @Get('models/:model')
  @ApiRoute({
    id: 'retrieveOpenAIModel',
    summary: 'Retrieve a model',
    tag: ApiTag.OpenAI,
    params: { model: 'Model name.' },
    ok: { description: 'The model.', json: 'OpenAIModel' },
  })
  async retrieveModel(@Param('model') id: string): Promise<OpenAIModel> {
    const model = await this.models.resolve(id, () => ModelNotFoundError.notFoundMessage(id));
    const hasAdapters = model.adapterPaths.length > 0;
    return {
      ...fromResolvedModel(id, model, hasAdapters ? await this.models.list() : []),
      ...this.contextFields(model),
    };
  }

  /** The context fields of a model row (ContextLengthService, read in the caller's request context). */
  private contextFields(model: ResolvedModel): Pick<OpenAIModel, 'context_length' | 'max_context_length'> {
    return toContextFields(this.contexts.of(model));
  }
}
