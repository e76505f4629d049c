import {
  ContextLengthExceededError,
  DaemonError,
  InsufficientMemoryError,
  InternalError,
  InvalidRequestError,
  ModelLoadError,
  RequestCancelledError,
  RunnerTerminatedError,
  ServerBusyError,
} from '../../common/errors';
import type { RunnerFault } from '../../config';
import type { AddonCandidate } from '../../native/addon-candidates';
import type {
  RunnerChatMessage,
  RunnerEvent,
  RunnerMemory,
  RunnerModelInfo,
  RunnerRequest,
  RunnerSpec,
  RunnerUsage,
} from '../runner';

/*
 * The IPC protocol between the daemon (ProcessRunner, process.runner.ts) and a runner process (runner-child.ts):
 * messages over the fork() channel with `serialization: 'advanced'` (structured clone: typed arrays such as the
 * embeddings' Float32Arrays travel as binary). Every request carries an id; the child answers each once.
 */

/** An error as it crosses the process boundary: the domain error's class name and fields. */
export interface WireError {
  name: string;
  message: string;
  /** InvalidRequestError's `param`. */
  param?: string;
  promptTokens?: number;
  contextSize?: number;
}

/** The request/response calls of the Runner interface that the child serves. */
export type RunnerCall =
  | { method: 'tokenize'; args: [text: string, options: { addSpecial: boolean; parseSpecial: boolean }] }
  | { method: 'detokenize'; args: [tokens: number[]] }
  | { method: 'applyChatTemplate'; args: [messages: RunnerChatMessage[], options: { addGenerationPrompt: boolean }] }
  | { method: 'embed'; args: [inputs: number[][]] }
  /** Runner.jsonSchemaToGrammar, run by the child's LlamaRunner (its grammar worker thread); `cancel` drops it. */
  | { method: 'jsonSchemaToGrammar'; args: [schema: string] };

/** The runner's state the parent keeps for its synchronous members, pushed by the child. */
export interface RunnerSnapshot {
  usage: RunnerUsage;
  memory: RunnerMemory;
  /** Runner.broken() of the LlamaRunner (an RPC worker's connection broke). */
  broken?: string;
}

/** Parent → child. */
export type ParentMessage =
  /**
   * `threads`: RunnerCreateOptions.threads (the daemon's share of the cores when spec.numThread is 0); `heartbeatMs`:
   * send a `heartbeat` this often once loaded (absent or 0: none, the watchdog is off); `fault`: a test hook
   * (LLAMAD_TEST_RUNNER_FAULT) the child simulates; `extraBufferTypes: false`: load without the CPU backend's extra
   * buffer types (the retry after a death by SIGILL, ProcessRunnerFactory); absent = on.
   */
  | {
      t: 'load';
      spec: RunnerSpec;
      threads?: number;
      heartbeatMs?: number;
      fault?: RunnerFault;
      extraBufferTypes?: false;
      /** The addon the child loads, exactly that file (the daemon's own); absent: the child searches for one. */
      addon?: AddonCandidate;
    }
  /** Runner.setThreads: the daemon split the cores anew (another runner started or stopped decoding). */
  | { t: 'threads'; threads: number }
  /**
   * A generation; `request.traceparent` (W3C) when it is traced: the child then adds its report of the work to the
   * `done` event (RunnerEvent `runner`), which the daemon records as the spans of the runner's side.
   */
  | { t: 'generate'; id: number; request: RunnerRequest }
  | ({ t: 'call'; id: number } & RunnerCall)
  /** Cancels a generation or an embed job by its id (unsubscribe, AbortSignal). */
  | { t: 'cancel'; id: number }
  /** Closes the runner and exits. */
  | { t: 'close' };

/** Child → parent. */
export type ChildMessage =
  | {
      t: 'loaded';
      info: RunnerModelInfo;
      slotContext: number;
      capabilities: { tools: boolean; thinking: boolean };
      snapshot: RunnerSnapshot;
    }
  | { t: 'loadFailed'; error: WireError }
  /** Load progress in [0, 1] (llama.cpp's progress callback, sent per move of 1 % or more): re-arms the load timer. */
  | { t: 'loadProgress'; progress: number }
  /**
   * Sent every `heartbeatMs` once loaded: `progress` is the engine's progress counter (decode steps of the generation
   * context): the daemon's watchdog (watchdog.ts) needs it to move while generations are in flight.
   */
  | { t: 'heartbeat'; progress: number }
  /**
   * The generation events of one tick, in order (`error` ends that generation), with the slots' usage after them.
   * Memory is not repeated per batch: it is fixed once loaded, and changes only with a call (embed's context).
   */
  | { t: 'events'; batch: GenerationRecord[]; usage: RunnerUsage; broken?: string }
  | { t: 'result'; id: number; value?: unknown; error?: WireError; snapshot: RunnerSnapshot };

/** One entry of an event batch: an event of generation `id`, or its end with an error. */
export type GenerationRecord = { id: number; event: RunnerEvent } | { id: number; error: WireError };

/** A domain error (or anything thrown) as it crosses the boundary. */
export function toWireError(err: unknown): WireError {
  if (!(err instanceof Error)) return { name: 'InternalError', message: String(err) };
  const wire: WireError = { name: err.name, message: err.message };
  if (err instanceof InvalidRequestError && err.param !== undefined) wire.param = err.param;
  if (err instanceof ContextLengthExceededError) {
    if (err.promptTokens !== undefined) wire.promptTokens = err.promptTokens;
    if (err.contextSize !== undefined) wire.contextSize = err.contextSize;
  }
  return wire;
}

/**
 * Rebuilds the domain error of a WireError (same class, hence the same HTTP status in every dialect); an unknown
 * name becomes an InternalError with the message.
 */
export function fromWireError(wire: WireError): DaemonError {
  switch (wire.name) {
    case 'InvalidRequestError':
      return new InvalidRequestError(wire.message, wire.param);
    case 'ContextLengthExceededError':
      return new ContextLengthExceededError(wire.message, wire.promptTokens, wire.contextSize);
    case 'ModelLoadError':
      return new ModelLoadError(wire.message);
    case 'InsufficientMemoryError':
      return new InsufficientMemoryError(wire.message);
    case 'RequestCancelledError':
      return new RequestCancelledError(wire.message);
    case 'ServerBusyError':
      return new ServerBusyError(wire.message);
    case 'RunnerTerminatedError':
      return new RunnerTerminatedError(wire.message.replace(/^llama runner process has terminated: /, ''));
    default:
      return new InternalError(wire.message || 'internal error');
  }
}
