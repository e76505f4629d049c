/**
 * Error texts that never reveal the server's file system (issue 11 item 4; Ollama's CVE-2024-39719 was an error
 * message telling a remote client whether a path exists). Node's system errors carry the absolute path in their
 * message (`ENOENT: no such file or directory, open '/…/blobs/sha256-…'`); these helpers reduce them to what went
 * wrong, in Go's errno wording (the words Ollama's own messages use), and remove absolute paths from any text.
 * Pure functions, no I/O: the one rendering step (toOllamaError, used by every dialect) calls them.
 */

/** Go's `syscall.Errno` texts (what `err.Error()` ends with in Ollama's messages) of the codes a daemon meets. */
const ERRNO_TEXT: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  EEXIST: 'file exists',
  ENOTEMPTY: 'directory not empty',
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large',
  EROFS: 'read-only file system',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files in system',
  EIO: 'input/output error',
  EXDEV: 'invalid cross-device link',
  ENAMETOOLONG: 'file name too long',
  ELOOP: 'too many levels of symbolic links',
  EBUSY: 'device or resource busy',
  ETXTBSY: 'text file busy',
  EBADF: 'bad file descriptor',
  EINVAL: 'invalid argument',
  ENOMEM: 'cannot allocate memory',
  ENOEXEC: 'exec format error',
  EAGAIN: 'resource temporarily unavailable',
  EPIPE: 'broken pipe',
  ECONNRESET: 'connection reset by peer',
  ECONNREFUSED: 'connection refused',
  ECONNABORTED: 'software caused connection abort',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network is unreachable',
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'cannot assign requested address',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'temporary failure in name resolution',
};

/** A Node system error: `code` like `ENOENT`, plus `syscall` and/or a numeric `errno` (and often `path`, `dest`). */
export type SystemError = Error & { code: string; syscall?: string; errno?: number; path?: string; dest?: string };

/**
 * Whether `err` is a Node system error (fs, net, child_process): an Error whose `code` is an errno name (`ENOENT`,
 * `EACCES`, `EAI_AGAIN`…) and that has a `syscall` or a numeric `errno`. Fastify's `FST_ERR_*` and undici's
 * `UND_ERR_*` errors are not.
 */
export function isSystemError(err: unknown): err is SystemError {
  if (!(err instanceof Error)) return false;
  const { code, syscall, errno } = err as Partial<SystemError>;
  return (
    typeof code === 'string' && /^E[A-Z0-9_]+$/.test(code) && (typeof syscall === 'string' || typeof errno === 'number')
  );
}

/** The Go wording of an errno code (`ENOENT` → `no such file or directory`); unknown codes are lower-cased. */
export function errnoText(code: string): string {
  return ERRNO_TEXT[code] ?? code.toLowerCase();
}

/**
 * A system error in words that name no file: `<syscall>: <errno text>`, e.g. `open: no such file or directory`,
 * `mkdir: permission denied`, `write: no space left on device` (just the errno text when there is no syscall).
 */
export function describeSystemError(err: SystemError): string {
  const text = errnoText(err.code);
  return err.syscall ? `${err.syscall}: ${text}` : text;
}

/** Characters that may stand before an absolute path: start, whitespace, quotes, brackets, `=`, `,`, `:`. */
const LEAD = String.raw`(^|[\s'"\x60(\[{=,:;<>])`;
/** A character of a path (stops at whitespace, quotes, closing brackets and commas). */
const PATH_CHAR = String.raw`[^\s'"\x60)\]},;<>]`;
/**
 * A space inside an unquoted path: the path goes on past a space when the next word holds a `/` itself
 * (`/srv/my models/x.gguf`: ` models/x.gguf` continues it). A last segment with a space (`/srv/my model.gguf`)
 * cannot be told from the prose after it; its directories are still removed.
 */
const SPACED_SEGMENT = String.raw`(?: [^\s'"\x60()\[\]{},;<>/]+\/${PATH_CHAR}*)*`;
/**
 * Absolute paths: POSIX with at least two segments (`/a/b…`; a lone `/x`, `1/2` or a URL's `//host/…` is left alone),
 * a Windows drive path (`C:\…`, `C:/…`), a UNC path (`\\server\share…`) or a `file://` URL.
 */
const ABSOLUTE_PATH = new RegExp(
  [
    String.raw`${LEAD}(\/(?:[^\s'"\x60)\]},;<>/])+\/${PATH_CHAR}*${SPACED_SEGMENT})`,
    String.raw`${LEAD}([A-Za-z]:[\\/]${PATH_CHAR}*)`,
    String.raw`${LEAD}(\\\\${PATH_CHAR}+)`,
    String.raw`${LEAD}(file:\/\/${PATH_CHAR}*)`,
  ].join('|'),
  'g',
);

/**
 * A quoted absolute path (`'…'`, `"…"`, backticks): it ends at its closing quote, spaces included — the form Node's
 * file-system errors use (`open '/srv/my models/x.gguf'`).
 */
const QUOTED_PATH = /(['"\x60])((?:\/[^'"\x60\n/]+\/|[A-Za-z]:[\\/]|\\\\|file:\/\/)[^'"\x60\n]*)\1/g;

/**
 * Replaces every absolute path in a text by `<path>`: `open '/srv/models/blobs/sha256-1': no such file` →
 * `open '<path>': no such file`; a quoted path ends at its quote, an unquoted one may go on past a space
 * (`/srv/my models/x.gguf`). URLs (`https://host/v2/…`) are kept, except `file://` ones.
 */
export function redactServerPaths(text: string): string {
  return text
    .replace(QUOTED_PATH, (_match, quote: string) => `${quote}<path>${quote}`)
    .replace(ABSOLUTE_PATH, (...groups: unknown[]) => {
      const lead = [groups[1], groups[3], groups[5], groups[7]].find((g) => typeof g === 'string') as string;
      return `${lead}<path>`;
    });
}

/**
 * Every `path`/`dest` that contains a directory separator, of the errors in `err` and its `cause` chain (at most 8
 * levels deep), longest first. A bare file name is left out (replacing it would mangle ordinary words).
 */
export function systemErrorPaths(err: unknown): string[] {
  const paths: string[] = [];
  let current: unknown = err;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    const { path, dest } = current as Partial<SystemError>;
    for (const p of [path, dest]) if (typeof p === 'string' && /[/\\]/.test(p) && p.length > 1) paths.push(p);
    current = (current as { cause?: unknown }).cause;
  }
  return paths.sort((a, b) => b.length - a.length);
}

/**
 * The message of an error as it may be sent to a client (the shared step of every dialect's rendering):
 * - the paths named by system errors in `err`'s cause chain are replaced by `<path>`, whatever the status (a 4xx
 *   that names a path the client sent keeps its wording but not the path the file system reported);
 * - for a 5xx, every absolute path ({@link redactServerPaths}).
 * @param status the HTTP status the message is rendered with.
 */
export function safeErrorMessage(message: string, status: number, err?: unknown): string {
  let text = message;
  for (const path of systemErrorPaths(err)) text = text.split(path).join('<path>');
  return status >= 500 ? redactServerPaths(text) : text;
}
