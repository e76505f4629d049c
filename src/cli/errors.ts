/** An error whose message the CLI prints as `Error: <message>` before exiting with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/**
 * Ollama's text when no server answers on OLLAMA_HOST (cmd/start_default.go `startApp`, the error of every command's
 * `checkServerHeartbeat`). It names `ollama serve` byte for byte; docs/cli.md says why.
 */
export const NOT_RUNNING = "could not connect to ollama server, run 'ollama serve' to start it";

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

/**
 * A 404 for `model 'NAME:latest' not found` when the user typed NAME becomes `model 'NAME' not found`: Ollama's server
 * names the model as the request did (server/routes.go `ShowHandler` and `DeleteHandler` in single quotes,
 * `CopyHandler` with `%q`, hence `quote`). Other errors pass through.
 */
export function notFoundAsTyped(err: unknown, typed: string, quote: "'" | '"' = "'"): unknown {
  const status = (err as { status_code?: number }).status_code;
  if (status !== 404 || !(err instanceof Error)) return err;
  const m = /^model ['"](.*)['"] not found$/.exec(err.message);
  if (!m) return err;
  return new CliError(`model ${quote}${typed}${quote} not found`);
}

/** The message to print for any error thrown by a command. */
export function errorText(err: unknown): string {
  if (isConnectionError(err)) return NOT_RUNNING;
  if (err instanceof Error) return err.message;
  return String(err);
}
