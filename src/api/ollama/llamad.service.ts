import { Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { defer, filter, map, Observable, switchMap } from 'rxjs';
import { InvalidRequestError, ModelNotFoundError } from '../../common/errors';
import { decodeRequestBody } from '../../common/http/ollama-validation.pipe';
import { decodeOptions } from '../../common/options';
import { parseKeepAlive } from '../../common/time';
import { ChatService, EmbedService, GenerateService, RerankService, TokenizeService } from '../../generation';
import { RerankRequestDto, RerankResponseWire } from './dto/rerank-request.dto';
import { ChatRequestDto } from './dto/chat-request.dto';
import {
  EmbeddingsRequestDto,
  EmbeddingsResponseWire,
  EmbedRequestDto,
  EmbedResponseWire,
} from './dto/embed-request.dto';
import { GenerateRequestDto } from './dto/generate-request.dto';
import {
  DetokenizeRequestDto,
  DetokenizeResponseWire,
  LlamaServerDetokenizeRequestDto,
  LlamaServerTokenizeRequestDto,
  LlamaServerTokenizeResponseWire,
  TokenizeRequestDto,
  TokenizeResponseWire,
} from './dto/tokenize-request.dto';
import { ChatResponseWire, GenerateResponseWire } from './dto/generation-response.dto';
import {
  fromChatRequest,
  fromGenerateRequest,
  toChatChunk,
  toChatResponse,
  toGenerateChunk,
  toGenerateResponse,
} from './ollama.mapper';
import { CopyRequestDto, DeleteRequestDto } from './dto/copy-delete-request.dto';
import { CreateRequestDto } from './dto/create-request.dto';
import { ListResponseWire, ProgressWire, ShowResponseWire } from './dto/model-responses.dto';
import { ShowRequestDto } from './dto/show-request.dto';
import { fromCreateRequest, toListModelWire, toProgressWire, toShowResponseWire } from './models.mapper';
import { CreateRequester, LOCAL_REQUESTER, ModelsService } from '../../models';
import { RegistryRequestDto } from './dto/registry-request.dto';
import { RegistryService } from '../../registry/registry.service';
import { RegistryProgress, RegistryProgressWire, toRegistryProgressWire } from '../../registry/registry.types';
import { LlamadStream } from './llamad-stream';
import { SchedulerService } from '../../scheduler';
import type { ProcessResponseWire } from './dto/ps-response.dto';
import { listProcessModels } from './ps.mapper';

/** Body of /api/generate (Ollama `api.GenerateRequest`; wire names). */
export type GenerateRequest = GenerateRequestDto;
/** Body of /api/chat (Ollama `api.ChatRequest`). */
export type ChatRequest = ChatRequestDto;
/** Body of /api/embed (Ollama `api.EmbedRequest`). */
export type EmbedRequest = EmbedRequestDto;
/** Body of the legacy /api/embeddings (Ollama `api.EmbeddingRequest`). */
export type EmbeddingsRequest = EmbeddingsRequestDto;
/** Body of /api/show. */
export type ShowRequest = ShowRequestDto;
/** Body of /api/create. */
export type CreateRequest = CreateRequestDto;
/** Body of /api/pull and /api/push. */
export type PullRequest = RegistryRequestDto;
/** Body of /api/copy. */
export type CopyRequest = CopyRequestDto;
/** Body of /api/delete. */
export type DeleteRequest = DeleteRequestDto;
/** The `stream: false` answer of /api/pull and /api/push. */
export interface RegistryResult {
  status: 'success';
}

/**
 * The programmatic API of the native (Ollama) surface: what a host application's services call without HTTP, and
 * what the native HTTP controllers call (they only add the wire format). Requests are the native API's request
 * shapes (plain objects are validated as the HTTP API validates bodies: InvalidRequestError with Ollama's message);
 * answers are its response shapes. Errors are the daemon's domain errors (DaemonError subclasses with `status`).
 */
@Injectable()
export class LlamadService {
  constructor(
    private readonly generateService: GenerateService,
    private readonly chatService: ChatService,
    private readonly embedService: EmbedService,
    private readonly models: ModelsService,
    private readonly registry: RegistryService,
    private readonly scheduler: SchedulerService,
    private readonly tokenizer: TokenizeService,
    private readonly reranker: RerankService,
  ) {}

  /** /api/ps: the models in memory, longest remaining time first (reference/ollama-api.md §3.7). */
  ps(): Promise<ProcessResponseWire> {
    return listProcessModels(this.scheduler, this.models);
  }

  /**
   * HEAD /api/blobs/:digest: resolves when the blob is in the store.
   * @throws InvalidRequestError `invalid digest format`; NotFoundError `blob "sha256:…" not found` (404).
   */
  checkBlob(digest: string): Promise<void> {
    return this.models.checkBlob(digest);
  }

  /**
   * POST /api/blobs/:digest: streams `body` into the store while hashing it (bytes, any size).
   * @returns true when the blob was created, false when it already existed.
   * @throws InvalidRequestError `invalid digest format` or `digest mismatch, expected …, got …` (nothing is kept).
   */
  receiveBlob(digest: string, body: Readable): Promise<boolean> {
    return this.models.receiveBlob(digest, body);
  }

  /**
   * /api/generate: the chunks as they are generated, or `.response()` for the one-object answer. An empty prompt
   * loads the model (with `keep_alive: 0`, unloads it).
   * @throws (synchronously) InvalidRequestError for an invalid request; the stream fails with ModelNotFoundError,
   *   UnsupportedCapabilityError, … (see GenerateService.generate).
   */
  generate(request: GenerateRequest): LlamadStream<GenerateResponseWire> {
    const body = decodeRequestBody(GenerateRequestDto, request);
    const cmd = fromGenerateRequest(body, process.hrtime.bigint());
    const events$ = this.generateService.generate(cmd);
    return new LlamadStream(
      events$.pipe(map((e) => toGenerateChunk(cmd.model, e))),
      events$.pipe(toGenerateResponse(cmd.model)),
      body.stream !== false && !GenerateService.isShortcut(cmd),
    );
  }

  /**
   * /api/chat: the chunks as they are generated (`for await (const chunk of llm.chat(req))`; leaving the loop
   * cancels generation), or `.response()` for the one-object answer. No messages loads the model.
   * @throws (synchronously) InvalidRequestError for an invalid request; the stream fails with domain errors.
   */
  chat(request: ChatRequest): LlamadStream<ChatResponseWire> {
    const body = decodeRequestBody(ChatRequestDto, request);
    const cmd = fromChatRequest(body, process.hrtime.bigint());
    const events$ = this.chatService.chat(cmd);
    return new LlamadStream(
      events$.pipe(map((e) => toChatChunk(cmd.model, e))),
      events$.pipe(toChatResponse(cmd.model)),
      body.stream !== false && !ChatService.isShortcut(cmd),
    );
  }

  /**
   * /api/embed: one vector per input, in order (zero metrics omitted as on the wire). `options.signal` cancels the
   * request (the HTTP layer aborts it when the client leaves): the engine's embed job stops and the promise rejects
   * with RequestCancelledError.
   * @throws InvalidRequestError, ModelNotFoundError, UnsupportedCapabilityError, ContextLengthExceededError,
   *   RequestCancelledError.
   */
  async embed(request: EmbedRequest, options: { signal?: AbortSignal } = {}): Promise<EmbedResponseWire> {
    const body = decodeRequestBody(EmbedRequestDto, request);
    const startedAt = process.hrtime.bigint();
    const model = body.model ?? '';
    const result = await this.embedService.embed({
      model,
      input: body.input,
      truncate: body.truncate ?? true,
      dimensions: body.dimensions ?? undefined,
      options: decodeOptions(body.options),
      keepAliveMs: parseKeepAlive(body.keep_alive),
      startedAt,
      signal: options.signal,
    });
    const out: EmbedResponseWire = { model, embeddings: result.embeddings };
    if (result.totalDurationNs > 0) out.total_duration = Math.round(result.totalDurationNs);
    if (result.loadDurationNs > 0) out.load_duration = Math.round(result.loadDurationNs);
    if (result.promptEvalCount > 0) out.prompt_eval_count = result.promptEvalCount;
    return out;
  }

  /**
   * The legacy /api/embeddings: `{embedding}` for one `prompt`; an empty prompt loads the model. `options.signal` as
   * for {@link embed}.
   */
  async embeddings(
    request: EmbeddingsRequest,
    options: { signal?: AbortSignal } = {},
  ): Promise<EmbeddingsResponseWire> {
    const body = decodeRequestBody(EmbeddingsRequestDto, request);
    if (!body.model) throw new InvalidRequestError('model is required', 'model');
    const result = await this.embedService.embed({
      model: body.model,
      input: body.prompt ?? '',
      truncate: true,
      options: decodeOptions(body.options),
      keepAliveMs: parseKeepAlive(body.keep_alive),
      startedAt: process.hrtime.bigint(),
      signal: options.signal,
    });
    return { embedding: result.embeddings[0] ?? [] };
  }

  /**
   * /api/tokenize (beyond Ollama): token ids of `content` (or `prompt`) in the model's vocabulary; special-token text
   * becomes its token, `add_special` (default true) adds BOS/EOS as the vocabulary says, `with_pieces` adds each
   * token's text. A model that is not loaded is opened vocabulary-only (no slot, not in /api/ps).
   * @throws InvalidRequestError; ModelNotFoundError (`model '' not found` for no name, 404).
   */
  async tokenize(request: TokenizeRequestDto): Promise<TokenizeResponseWire> {
    const body = decodeRequestBody(TokenizeRequestDto, request);
    if (!body.model) throw new ModelNotFoundError('');
    const result = await this.tokenizer.tokenize({
      model: body.model,
      content: body.content ?? body.prompt ?? '',
      addSpecial: body.add_special ?? true,
      parseSpecial: true,
      withPieces: body.with_pieces ?? false,
    });
    return result.pieces ? { ...result, pieces: result.pieces } : { model: result.model, tokens: result.tokens };
  }

  /**
   * /api/detokenize (beyond Ollama): the text of token ids (special tokens rendered as text).
   * @throws InvalidRequestError (an id out of the vocabulary); ModelNotFoundError.
   */
  async detokenize(request: DetokenizeRequestDto): Promise<DetokenizeResponseWire> {
    const body = decodeRequestBody(DetokenizeRequestDto, request);
    if (!body.model) throw new ModelNotFoundError('');
    return this.tokenizer.detokenize(body.model, body.tokens);
  }

  /** llama-server's /tokenize: the only loaded model unless `model` names one; `add_special` defaults to false. */
  async llamaServerTokenize(request: LlamaServerTokenizeRequestDto): Promise<LlamaServerTokenizeResponseWire> {
    const body = decodeRequestBody(LlamaServerTokenizeRequestDto, request);
    const result = await this.tokenizer.tokenize({
      model: body.model ?? '',
      content: body.content ?? '',
      addSpecial: body.add_special ?? false,
      parseSpecial: body.parse_special ?? true,
      withPieces: body.with_pieces ?? false,
    });
    const pieces = result.pieces;
    return { tokens: pieces ? result.tokens.map((id, i) => ({ id, piece: pieces[i] })) : result.tokens };
  }

  /** llama-server's /detokenize: the only loaded model unless `model` names one. */
  async llamaServerDetokenize(request: LlamaServerDetokenizeRequestDto): Promise<{ content: string }> {
    const body = decodeRequestBody(LlamaServerDetokenizeRequestDto, request);
    const { content } = await this.tokenizer.detokenize(body.model ?? '', body.tokens);
    return { content };
  }

  /**
   * /api/rerank and /v1/rerank (beyond Ollama): scores `documents` against `query` with a reranking model; best first,
   * cut to `top_n`; `return_documents` adds `document: {text}`. `options.signal` cancels as for {@link embed}.
   * @throws InvalidRequestError (no query; not a reranker), ModelNotFoundError, RequestCancelledError.
   */
  async rerank(request: RerankRequestDto, options: { signal?: AbortSignal } = {}): Promise<RerankResponseWire> {
    const body = decodeRequestBody(RerankRequestDto, request);
    const model = body.model ?? '';
    if (body.query === undefined) throw new InvalidRequestError('query is required', 'query');
    const documents = body.documents ?? [];
    const result = await this.reranker.rerank({
      model,
      query: body.query,
      documents,
      topN: body.top_n ?? undefined,
      options: decodeOptions(body.options),
      keepAliveMs: parseKeepAlive(body.keep_alive),
      signal: options.signal,
    });
    return {
      model,
      object: 'list',
      results: result.results.map((r) => ({
        index: r.index,
        relevance_score: r.relevanceScore,
        ...(body.return_documents ? { document: { text: documents[r.index] } } : {}),
      })),
      usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
    };
  }

  /** /api/tags: local models, newest first. */
  async list(): Promise<ListResponseWire> {
    const models = await this.models.list();
    return { models: models.map(toListModelWire) };
  }

  /**
   * /api/show: a model's Modelfile, template, parameters, details, capabilities and metadata.
   * @param request a model name, or the request body (`verbose` adds the tensors and full metadata).
   * @throws InvalidRequestError `model is required`; ModelNotFoundError.
   */
  async show(request: ShowRequest | string): Promise<ShowResponseWire> {
    const body = decodeRequestBody(ShowRequestDto, typeof request === 'string' ? { model: request } : request);
    const info = await this.models.show(body.model || body.name || '', body.verbose ?? false);
    return toShowResponseWire(info, { system: body.system, options: body.options });
  }

  /**
   * /api/create: progress records from `parsing modelfile` to `success`. Validation errors (an unknown FROM, a bad
   * Modelfile) fail the stream before its first record.
   * @param requester who asks: FROM/ADAPTER may name server files only for a local requester. Default: local (the
   *   host application's own code); the HTTP API passes the client's.
   */
  create(request: CreateRequest, requester: CreateRequester = LOCAL_REQUESTER): LlamadStream<ProgressWire> {
    const body = decodeRequestBody(CreateRequestDto, request);
    const progress$ = defer(async () => this.models.prepareCreate(fromCreateRequest(body), requester)).pipe(
      switchMap((plan) => this.models.create(plan)),
      map(toProgressWire),
    );
    return new LlamadStream(progress$, progress$, body.stream !== false);
  }

  /**
   * /api/pull: progress records (`pulling manifest`, `pulling <layer>` with byte counts, …, `success`).
   * @param request a model name, or the request body (`insecure` allows plain http).
   */
  pull(request: PullRequest | string): LlamadStream<RegistryProgressWire, RegistryResult> {
    const body = decodeRequestBody(RegistryRequestDto, typeof request === 'string' ? { model: request } : request);
    return registryStream(
      defer(() => this.registry.pull(this.registry.preparePull(body.model || body.name || '', body.insecure ?? false))),
      body.stream !== false,
    );
  }

  /** /api/push: uploads a local model; progress records as pull. */
  push(request: PullRequest | string): LlamadStream<RegistryProgressWire, RegistryResult> {
    const body = decodeRequestBody(RegistryRequestDto, typeof request === 'string' ? { model: request } : request);
    const progress$ = defer(async () =>
      this.registry.preparePush(body.model || body.name || '', body.insecure ?? false),
    ).pipe(switchMap((plan) => this.registry.push(plan)));
    return registryStream(progress$, body.stream !== false);
  }

  /**
   * /api/copy: copies a model (blobs are shared).
   * @throws InvalidRequestError `source "<x>" is invalid` / `destination "<x>" is invalid`; ModelNotFoundError.
   */
  async copy(request: CopyRequest): Promise<void> {
    const body = decodeRequestBody(CopyRequestDto, request);
    await this.models.copy(body.source ?? '', body.destination ?? '');
  }

  /**
   * /api/delete: removes a model (unused blobs are removed, a loaded runner is unloaded).
   * @param request a model name, or the request body.
   */
  async delete(request: DeleteRequest | string): Promise<void> {
    const body = decodeRequestBody(DeleteRequestDto, typeof request === 'string' ? { model: request } : request);
    await this.models.delete(body.model || body.name || '');
  }
}

/** Pull/push progress as chunks; the `stream: false` answer is `{"status":"success"}`. */
function registryStream(
  progress$: Observable<RegistryProgress>,
  stream: boolean,
): LlamadStream<RegistryProgressWire, RegistryResult> {
  return new LlamadStream(
    progress$.pipe(map(toRegistryProgressWire)),
    progress$.pipe(
      filter((p) => p.status === 'success'),
      map((): RegistryResult => ({ status: 'success' })),
    ),
    stream,
  );
}
