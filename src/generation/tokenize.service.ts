import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import type { Subscription } from 'rxjs';
import type { NativeModel } from '../../binding';
import { InvalidRequestError, ModelLoadError } from '../common/errors';
import { ModelLifecycleService, ModelsService, seesEveryModel } from '../models';
import { mapNativeError, NATIVE_BINDING, NativeBindingLoader } from '../native';
import { SchedulerService } from '../scheduler';

/** Vocabulary-only models kept for tokenize/detokenize of models that are not loaded (least recently used out). */
export const VOCAB_CACHE_SIZE = 4;

/** What tokenize/detokenize need of a model: its vocabulary. */
interface Vocabulary {
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Promise<number[]>;
  /** Text of the ids, special tokens rendered as text (as the runner's detokenize). */
  detokenize(tokens: number[]): Promise<string>;
  /** A token id to put in front of a piece (BOS, else 0): see {@link pieceOf}. */
  anchor: number;
}

/**
 * The text of one token as llama-server's `with_pieces` gives it (common_token_to_piece, special tokens rendered).
 * llama_detokenize drops the leading space of the FIRST token for SentencePiece vocabularies (add_space_prefix), so
 * the token is detokenized after an anchor token and the anchor's text cut off. A piece that is an incomplete UTF-8
 * sequence comes out as U+FFFD (llama-server gives its bytes).
 */
async function pieceOf(vocab: Vocabulary, token: number): Promise<string> {
  const [anchor, both] = await Promise.all([vocab.detokenize([vocab.anchor]), vocab.detokenize([vocab.anchor, token])]);
  return both.startsWith(anchor) ? both.slice(anchor.length) : vocab.detokenize([token]);
}

/** A tokenize request in domain form. */
export interface TokenizeCommand {
  /** The model name as sent; '' when the dialect has none (llama-server's /tokenize: the only loaded model). */
  model: string;
  content: string;
  /** Add BOS/EOS as the vocabulary says (llama-server's add_special; default true). */
  addSpecial: boolean;
  /** Parse special-token text (`<|im_start|>`) into its token (llama-server's parse_special; default true). */
  parseSpecial: boolean;
  /** Also return each token's piece (its text, special tokens rendered). */
  withPieces: boolean;
}

export interface TokenizeResult {
  /** The resolved model's short name. */
  model: string;
  tokens: number[];
  pieces?: string[];
}

/** Whether `v` is a list of token ids (integers ≥ 0). */
export function isTokenList(v: unknown): v is number[] {
  return Array.isArray(v) && v.every((t) => Number.isInteger(t) && (t as number) >= 0);
}

/**
 * /api/tokenize, /api/detokenize and llama-server's /tokenize, /detokenize (beyond Ollama): the model's own
 * vocabulary. A loaded runner of the model is used as is (no queue, no slot, keep-alive untouched but for the idle
 * timer restarting); a model that is not loaded is opened vocabulary-only (llama.cpp `vocab_only`: no weights, no
 * context, never in /api/ps), kept in a small LRU cache, dropped when the model is deleted.
 */
@Injectable()
export class TokenizeService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(TokenizeService.name);
  /** Vocabulary-only models by weights path, least recently used first (Map insertion order). */
  private readonly vocabs = new Map<string, Promise<NativeModel>>();
  private deletions?: Subscription;

  constructor(
    private readonly models: ModelsService,
    private readonly scheduler: SchedulerService,
    @Inject(NATIVE_BINDING) private readonly loadBinding: NativeBindingLoader,
    @Optional() private readonly lifecycle?: ModelLifecycleService,
  ) {}

  onModuleInit(): void {
    this.deletions = this.lifecycle?.deleted$.subscribe((deleted) => this.drop(deleted.modelPath));
  }

  async onApplicationShutdown(): Promise<void> {
    this.deletions?.unsubscribe();
    const paths = [...this.vocabs.keys()];
    await Promise.allSettled(paths.map((p) => this.drop(p)));
  }

  /** Vocabulary-only models open now (tests, diagnostics). */
  cachedVocabularies(): number {
    return this.vocabs.size;
  }

  /**
   * Tokens of `cmd.content` (and their pieces with `withPieces`).
   * @throws ModelNotFoundError (404), InvalidRequestError (no model named and not exactly one loaded).
   */
  async tokenize(cmd: TokenizeCommand): Promise<TokenizeResult> {
    return this.withVocabulary(cmd.model, async (vocab, model) => {
      const tokens = await vocab.tokenize(cmd.content, cmd.addSpecial, cmd.parseSpecial);
      const result: TokenizeResult = { model, tokens };
      if (cmd.withPieces) {
        result.pieces = [];
        for (const t of tokens) result.pieces.push(await pieceOf(vocab, t));
      }
      return result;
    });
  }

  /**
   * Text of token ids (special tokens rendered as text).
   * @throws InvalidRequestError (ids not integers ≥ 0, or out of the vocabulary's range: 400), ModelNotFoundError.
   */
  async detokenize(modelName: string, tokens: unknown): Promise<{ model: string; content: string }> {
    if (tokens !== undefined && tokens !== null && !isTokenList(tokens)) {
      throw new InvalidRequestError('tokens must be an array of token ids (integers >= 0)', 'tokens');
    }
    const ids = tokens ?? [];
    return this.withVocabulary(modelName, async (vocab, model) => ({
      model,
      content: ids.length > 0 ? await vocab.detokenize(ids) : '',
    }));
  }

  private async withVocabulary<T>(name: string, work: (vocab: Vocabulary, model: string) => Promise<T>): Promise<T> {
    const { modelPath, shortName } = await this.pick(name);
    const loaded = await this.scheduler.withLoaded(modelPath, (runner) =>
      work(
        {
          tokenize: (text, addSpecial, parseSpecial) => runner.tokenize(text, { addSpecial, parseSpecial }),
          detokenize: (ids) => runner.detokenize(ids),
          anchor: Math.max(0, runner.info.bos),
        },
        shortName,
      ),
    );
    if (loaded) return loaded.value;
    const native = await this.vocabulary(modelPath);
    return work(
      {
        tokenize: (text, addSpecial, parseSpecial) =>
          call(async () => Array.from(await native.tokenizeAsync(text, addSpecial, parseSpecial))),
        detokenize: (ids) => call(() => native.detokenizeAsync(Int32Array.from(ids), false, true)),
        anchor: Math.max(0, native.info().bos),
      },
      shortName,
    );
  }

  /**
   * The model named, or with no name the only loaded one (llama-server's routes carry no model); for a caller limited
   * to a model list, the only loaded one of its list.
   */
  private async pick(name: string): Promise<{ modelPath: string; shortName: string }> {
    if (name !== '') {
      const model = await this.models.resolve(name, () => `model '${name}' not found`);
      return { modelPath: model.modelPath, shortName: model.shortName };
    }
    let loaded = this.scheduler.loaded().filter((r) => !r.expired);
    if (!seesEveryModel()) {
      // A caller limited to a model list counts only the loaded models of its list (docs/security.md "Tenants").
      const listed = await Promise.all(
        loaded.map((r) => this.models.findByWeights(r.spec.modelPath).catch(() => null)),
      );
      loaded = loaded.filter((_, i) => listed[i] !== null);
    }
    const paths = [...new Set(loaded.map((r) => r.spec.modelPath))];
    if (paths.length !== 1) {
      throw new InvalidRequestError(
        paths.length === 0
          ? 'no model is loaded: name one with "model" (or use /api/tokenize, /api/detokenize)'
          : 'more than one model is loaded: name one with "model" (or use /api/tokenize, /api/detokenize)',
        'model',
      );
    }
    const entry = loaded.find((r) => r.spec.modelPath === paths[0]);
    return { modelPath: paths[0], shortName: entry?.name ?? '' };
  }

  /** The vocabulary-only model of these weights, opened on first use; most recently used last. */
  private vocabulary(modelPath: string): Promise<NativeModel> {
    let pending = this.vocabs.get(modelPath);
    if (pending) {
      this.vocabs.delete(modelPath);
      this.vocabs.set(modelPath, pending);
      return pending;
    }
    pending = (async () => {
      let model: NativeModel;
      try {
        model = new (this.loadBinding().Model)(modelPath, { vocabOnly: true });
        await model.load();
      } catch (err) {
        this.vocabs.delete(modelPath);
        const mapped = mapNativeError(err);
        throw mapped instanceof ModelLoadError ? mapped : new ModelLoadError(mapped.message, { cause: err });
      }
      return model;
    })();
    this.vocabs.set(modelPath, pending);
    while (this.vocabs.size > VOCAB_CACHE_SIZE) {
      const oldest = this.vocabs.keys().next().value as string;
      void this.drop(oldest);
    }
    return pending;
  }

  /** Closes the vocabulary-only model of these weights (dispose waits for calls in flight). */
  private async drop(modelPath: string): Promise<void> {
    const pending = this.vocabs.get(modelPath);
    if (!pending) return;
    this.vocabs.delete(modelPath);
    try {
      await (await pending).dispose();
    } catch (err) {
      this.logger.debug(`vocabulary of ${modelPath} not closed: ${(err as Error).message}`);
    }
  }
}

/** Maps the addon's errors to domain errors (LLAMA_INVALID_ARGUMENT, e.g. an id out of range → 400). */
async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw mapNativeError(err);
  }
}
