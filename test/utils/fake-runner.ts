import { Observable } from 'rxjs';
import type {
  Runner,
  RunnerChatMessage,
  RunnerEvent,
  RunnerFactory,
  RunnerModelInfo,
  RunnerRequest,
  RunnerSpec,
} from '../../src/inference/runner/runner';

/** A Runner that replays `pieces` per request, for scheduler tests that need no binding at all. */
export class FakeRunner implements Runner {
  closed = false;
  readonly info: RunnerModelInfo = { trainContext: 2048, addBos: false, bos: -1, hasChatTemplate: true };
  readonly requests: RunnerRequest[] = [];

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

  tokenize(text: string): number[] {
    return Array.from(text, (c) => c.charCodeAt(0));
  }

  detokenize(tokens: number[]): string {
    return String.fromCharCode(...tokens);
  }

  applyChatTemplate(messages: RunnerChatMessage[]): string {
    return messages.map((m) => `${m.role}: ${m.content}\n`).join('') + 'assistant: ';
  }

  async close(): Promise<void> {
    await Promise.resolve();
    this.closed = true;
  }
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
