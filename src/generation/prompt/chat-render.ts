import { ResolvedModel } from '../../models';
import { Runner } from '../../runner';
import { ChatCommand, ChatMessage } from '../generation.types';
import { tokenizePrompt } from './fit';
import { goGrammars, GoGrammars, renderGo, renderGoTextAsync } from './go-render';
import { GoTemplateHandle, GoTemplatesApi } from './go-template.port';
import { GrammarBudget, throwIfCancelled } from './grammar-budget';
import { foldAudio } from './audio';
import { toMediaPrompt, withImageMarkers } from './media';
import { nativeGrammars, NativePrepared, renderNative, renderNativeText } from './native-render';
import { PreparedPrompt } from './prompt.types';
import { NativeRenderOptions, thinkingEnabled } from './render-options';

/** A render measured by the fitting search: its prompt text and tokens. */
export interface ChatProbe {
  text: string;
  tokens: number[];
}

/**
 * The renders of ONE chat request (docs/architecture.md "The prompt stage"): everything that does not depend on the
 * messages — the grammar budget check, the `format` grammar, the forced tool call's argument grammars, the
 * common/chat tools — is done once in {@link ChatRenderer.create}; then {@link render} (a full render: prompt,
 * grammar, stops, output parser, tokens) and {@link probe} (text and tokens only, for the fitting search) may run
 * several times. Between every step the request's AbortSignal is checked (RequestCancelledError), so nothing
 * continues once the client has gone; a Go-template render that runs in a worker thread (renderGoTextAsync) is
 * stopped by it.
 */
export class ChatRenderer {
  private constructor(
    private readonly runner: Runner,
    private readonly opts: NativeRenderOptions,
    private readonly budget: GrammarBudget,
    private readonly go: { api: GoTemplatesApi; template: GoTemplateHandle; grammars: GoGrammars } | undefined,
    private readonly native: NativePrepared,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /**
   * The renderer of `cmd` for `runner`: rendered mode with `go` (the model's Go TEMPLATE), else native mode (the GGUF
   * Jinja template through the runner), with the request's tools, tool choice, thinking and format (§8.1). Checks the
   * grammar budget before converting anything, then converts the grammars (off the JS thread).
   * @throws InvalidRequestError (a grammar budget limit, `invalid JSON schema in format: …`); RequestCancelledError.
   */
  static async create(
    cmd: ChatCommand,
    model: ResolvedModel,
    runner: Runner,
    go: { api: GoTemplatesApi; template: GoTemplateHandle } | undefined,
    signal?: AbortSignal,
  ): Promise<ChatRenderer> {
    throwIfCancelled(signal);
    const budget = GrammarBudget.of(cmd.format, cmd.tools);
    const opts: NativeRenderOptions = {
      tools: cmd.tools,
      toolChoice: cmd.toolChoice,
      think: cmd.think,
      thinking: thinkingEnabled(cmd.think, model),
      format: cmd.format,
    };
    if (go) {
      const grammars = await goGrammars(go.api, go.template, runner, opts, budget, signal);
      return new ChatRenderer(runner, opts, budget, { ...go, grammars }, {}, signal);
    }
    const native = await nativeGrammars(runner, opts, budget, signal);
    return new ChatRenderer(runner, opts, budget, undefined, native, signal);
  }

  /**
   * A full render + tokenize of `messages`: the prompt with its grammar, stops and output parser; tokenized like
   * llama.cpp's server (tokenizePrompt). Messages with images or audio (audio numbered after a message's images) get `[img-N]` markers turned into media markers
   * (`media`; `tokens` then only count the text). No fitting.
   * @param probe the probe of these same messages, when the search made one: its tokens are reused when the text is
   *   the same.
   * @throws InvalidRequestError `template error: …`, a grammar budget limit; RequestCancelledError.
   */
  async render(messages: ChatMessage[], probe?: ChatProbe): Promise<PreparedPrompt> {
    throwIfCancelled(this.signal);
    messages = foldAudio(messages); // audio rides with the images (after them), as Ollama's templates see media
    const images = messages.flatMap((m) => m.images ?? []);
    const r = this.go
      ? renderGo(
          this.go.api,
          this.go.template,
          messages,
          this.opts,
          this.go.grammars,
          probe?.text ?? (await renderGoTextAsync(this.go.api, this.go.template, messages, this.opts, this.signal)),
        )
      : await renderNative(
          this.runner,
          images.length > 0 ? withImageMarkers(messages) : messages,
          this.opts,
          this.native,
          this.budget,
        );
    throwIfCancelled(this.signal);
    const media = toMediaPrompt(r.text, images);
    if (media) return { ...r.prompt, tokens: await tokenizePrompt(this.runner, media.prompt), media };
    const tokens = probe && probe.text === r.text ? probe.tokens : await tokenizePrompt(this.runner, r.text);
    throwIfCancelled(this.signal);
    return { ...r.prompt, tokens };
  }

  /**
   * The prompt text and tokens of `messages` only (no grammar, parser or tool-call grammar built): what the fitting
   * search measures. Not for messages with images.
   * @throws InvalidRequestError `template error: …`; RequestCancelledError.
   */
  async probe(messages: ChatMessage[]): Promise<ChatProbe> {
    throwIfCancelled(this.signal);
    const text = this.go
      ? await renderGoTextAsync(this.go.api, this.go.template, messages, this.opts, this.signal)
      : await renderNativeText(this.runner, messages, this.opts, this.native);
    throwIfCancelled(this.signal);
    const tokens = await tokenizePrompt(this.runner, text);
    throwIfCancelled(this.signal);
    return { text, tokens };
  }
}
