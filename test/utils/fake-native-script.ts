/** What a FakeBinding task does (FakeScript), its chat behaviour and native errors as the addon throws them. */
import type { NativeErrorCode, NativeStopReason } from '../../binding';

/** What a fake task does: emit these pieces, then end with `reason` (or fail with `error` after the pieces). */
export interface FakeScript {
  /** Text pieces, one token event each (token ids are 1000 + index). */
  pieces: string[];
  /** How the task ends when it is not cancelled (default 'eog'). */
  reason?: Exclude<NativeStopReason, 'cancelled'>;
  /** The stop string reported on `done` (set `reason: 'stop'` too, as the addon does). */
  stopString?: string;
  /** Fail with an `error` event after the pieces instead of `done`. */
  error?: { code: NativeErrorCode; message: string };
  /** Milliseconds between events (default 0: one macrotask each). */
  delayMs?: number;
}

/** The fake renderChat/parser behaviour (what a GGUF Jinja template would do through llama.cpp common/chat). */
export interface FakeChatBehaviour {
  /** chatCapabilities(): what the fake Jinja template supports. */
  tools: boolean;
  thinking: boolean;
  /** Grammar returned when tools are given (lazy, triggered by `<tool_call>`). */
  toolGrammar: string;
  /** Extra stops reported by renderChat. */
  additionalStops: string[];
}

/** A native error the way the addon throws them (Error + code). */
export function nativeError(code: NativeErrorCode, message: string): Error & { code: NativeErrorCode } {
  return Object.assign(new Error(message), { code });
}
