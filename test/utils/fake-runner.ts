import { Observable } from 'rxjs';
import { RequestCancelledError } from '../../src/common/errors';
import type {
  Runner,
  RunnerChatMessage,
  RunnerChatRender,
  RunnerChatRequest,
  RunnerEvent,
  RunnerFactory,
  RunnerModelInfo,
  RunnerRequest,
  RunnerSpec,
} from '../../src/runner/runner';

/**
 * A Runner that replays `pieces` per request, for tests that need no binding at all (scheduler, services).
 * renderChat renders `role: content` lines and parses nothing (content only); embed returns `[len, 1, 0…]` vectors
 * of `dims` floats and records each call in `embedCalls`.
 */
export class FakeRunner implements Runner {
  closed = false;
  readonly info: RunnerModelInfo = { trainContext: 2048, addBos: false, bos: -1, hasChatTemplate: true };
  readonly requests: RunnerRequest[] = [];
  readonly renders: RunnerChatRequest[] = [];
  readonly embedCalls: number[][][] = [];
  /** Width of the vectors embed() returns. */
  dims = 4;

  constructor(
    readonly spec: RunnerSpec,
    private readonly pieces: string[] = ['a', 'b'],
  ) {}

  get slotContext(): number {
    return this.spec.numCtx;
  }

  generate(request: RunnerRequest): Observable<RunnerEvent> {
    this.requests.push(request);
    return new Observable<RunnerEvent>((sub) => {
      const timer = setTimeout(() => {
        this.pieces.forEach((text, i) => sub.next({ kind: 'token', text, token: i }));
        sub.next({
          kind: 'done',
          reason: 'stop',
          timings: {
            promptEvalCount: request.tokens.length,
            promptCachedCount: 0,
            promptEvalDurationNs: 1,
            evalCount: this.pieces.length,
            evalDurationNs: 2,
          },
        });
        sub.complete();
      }, 1);
      return () => clearTimeout(timer);
    });
  }

  async tokenize(text: string): Promise<number[]> {
    await Promise.resolve();
    return Array.from(text, (c) => c.charCodeAt(0));
  }

  async detokenize(tokens: number[]): Promise<string> {
    await Promise.resolve();
    return String.fromCharCode(...tokens);
  }

  async applyChatTemplate(messages: RunnerChatMessage[]): Promise<string> {
    await Promise.resolve();
    return chatText(messages);
  }

  async renderChat(request: RunnerChatRequest): Promise<RunnerChatRender> {
    await Promise.resolve();
    this.renders.push(request);
    return {
      prompt: chatText(request.messages),
      format: 'Content-only',
      grammar: '',
      grammarLazy: false,
      grammarTriggers: [],
      preservedTokens: [],
      additionalStops: [],
      thinking: false,
      generationPrompt: '',
      parser: {
        parse: (text) => ({ content: text, reasoningContent: '', toolCalls: [] }),
        parseStep: (text) => ({ content: text, reasoningContent: '', toolCalls: [], frontier: 0 }),
        stepDelimiters: () => [],
      },
    };
  }

  chatCapabilities(): { tools: boolean; thinking: boolean } {
    return { tools: false, thinking: false };
  }

  /** Schemas converted so far, in order. */
  readonly conversions: string[] = [];

  async jsonSchemaToGrammar(schema: string, signal?: AbortSignal): Promise<string> {
    await Promise.resolve();
    if (signal?.aborted) throw new RequestCancelledError();
    this.conversions.push(schema);
    return `root ::= ${schema}`;
  }

  async embed(inputs: number[][], signal?: AbortSignal): Promise<Float32Array[]> {
    await Promise.resolve();
    if (signal?.aborted) throw new RequestCancelledError();
    this.embedCalls.push(inputs);
    return inputs.map((t) => {
      const v = new Float32Array(this.dims);
      v[0] = t.length;
      v[1] = 1;
      return v;
    });
  }

  async close(): Promise<void> {
    await Promise.resolve();
    this.closed = true;
  }
}

/** The fake template: `role: content` lines, then `assistant: `. */
function chatText(messages: RunnerChatMessage[]): string {
  return messages.map((m) => `${m.role}: ${m.content}\n`).join('') + 'assistant: ';
}

/** Counts loads; `delayMs` makes loads slow; `fail` makes the next loads reject. */
export class FakeRunnerFactory implements RunnerFactory {
  readonly created: FakeRunner[] = [];
  delayMs = 0;
  fail?: Error;

  async create(spec: RunnerSpec): Promise<Runner> {
    await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.fail) throw this.fail;
    const runner = new FakeRunner(spec);
    this.created.push(runner);
    return runner;
  }
}

/** A RunnerSpec with defaults. */
export function spec(overrides: Partial<RunnerSpec> = {}): RunnerSpec {
  return { modelPath: '/m/a', numCtx: 2048, numParallel: 1, numBatch: 512, numGpu: -1, numThread: 0, ...overrides };
}
