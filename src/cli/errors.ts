/** An error whose message the CLI prints as `Error: <message>` before exiting with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Ollama's text when no server answers on OLLAMA_HOST. */
export const NOT_RUNNING = 'could not connect to ollama app, is it running?';
/** The hint printed after NOT_RUNNING: how to start a server (the CLI never starts a hidden one). */
export const START_HINT = "start one with 'llamad serve' (or set OLLAMA_HOST to a running server)";

/** Whether an error means the server could not be reached (refused, unknown host, reset before an answer). */
export function isConnectionError(err: unknown): boolean {
  const codes = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT'];
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i++) {
    const code = (e as { code?: string }).code;
    if (code && codes.includes(code)) return true;
    if (e instanceof AggregateError && e.errors.some((x) => isConnectionError(x))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return err instanceof TypeError && /fetch failed/.test(err.message);
}

/** Whether an error is an aborted request (Ctrl-C during a stream). */
export function isAbortError(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || /aborted/i.test(err.message));
}

/** The message to print for any error thrown by a command. */
export function errorText(err: unknown): string {
  if (isConnectionError(err)) return NOT_RUNNING;
  if (err instanceof Error) return err.message;
  return String(err);
}
